// Boost.Test's runner and main(), compiled once for every test executable when the compiled
// Boost.Test library cannot be linked (it was built with another standard library). Each test's
// BOOST_TEST_MODULE provides the init function this main() calls.
#include <boost/test/included/unit_test.hpp>
