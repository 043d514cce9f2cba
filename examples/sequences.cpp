// The blog series' generator demo (its part 3), with coral::generator: a lazy pipeline that shows
// which stage sees which value and when, Fibonacci cut off with take_while, and sum / fold over
// values from different sources. Needs only <coral/generator.hpp> (no Asio).
#include <coral/generator.hpp>
#include <iostream>
#include <list>
#include <string>
#include <utility>

// An endless sequence: a generator only runs as far as its consumer asks.
coral::generator<long> fibonacci() {
  long a = 0, b = 1;
  for (;;) {
    co_yield a;
    a = std::exchange(b, a + b);
  }
}

int main() {
  // Each value goes through every stage before the next value is even produced, and take(3) stops
  // the whole pipeline once it has three values: 3 and 4 are never even filtered.
  std::cout << "-- pipeline: filter -> map -> flat_map -> take(3)\n";
  coral::generator<int>::from(1, 2, 3, 4)
      .filter([](int i) {
        std::cout << "filter: " << i << '\n';
        return i % 2 == 0;
      })
      .map([](int i) {
        std::cout << "map: " << i << '\n';
        return i * 3;
      })
      .flat_map([](int i) -> coral::generator<int> {
        std::cout << "flat_map: " << i << '\n';
        for (int j = 0; j < i; ++j) co_yield j;
      })
      .take(3)
      .for_each([](int i) { std::cout << "for_each: " << i << '\n'; });

  std::cout << "-- fibonacci below 100\n";
  fibonacci().take_while([](long n) { return n < 100; }).for_each([separator = ""](long n) mutable {
    std::cout << std::exchange(separator, " ") << n;
  });
  std::cout << '\n';

  std::cout << "-- sum and fold\n";
  // from(a, b, ...) converts each argument to the element type: ints and doubles mixed.
  std::cout << "sum of 1, 2.5, 3, 4.5: " << coral::generator<double>::from(1, 2.5, 3, 4.5).sum() << '\n';
  std::list<int> list{1, 2, 3, 4, 5};
  std::cout << "sum of a std::list 1..5: " << coral::generator<int>::from(list).sum() << '\n';
  int array[] = {1, 2, 3, 4, 5};
  std::cout << "product of an array 1..5 (fold): "
            << coral::generator<int>::from(array).fold(1, [](int acc, int i) { return acc * i; }) << '\n';
  std::cout << "words joined (fold): "
            << coral::generator<std::string>::from({"co", "rou", "tine"})
                   .fold(std::string(), [](std::string acc, std::string s) { return acc.empty() ? s : acc + "-" + s; })
            << '\n';
}
