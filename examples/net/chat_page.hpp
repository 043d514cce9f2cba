#pragma once

// The page http_server serves at /chat: the chat room in a browser, one HTML page with its script
// (no framework, no build step). It joins the room over a WebSocket at /chat/ws on the same host
// (wss:// when the page came over HTTPS), shows each line as it comes, and sends "name: text".
// ?name=NAME names the participant (otherwise guest-N). The body's data-state attribute says where
// the connection is: connecting, open or closed.

#include <string_view>

namespace net_demo::http_demo {

inline constexpr std::string_view chat_page = R"page(<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>coral chat</title>
<style>
  body { font: 15px/1.45 system-ui, sans-serif; max-width: 42rem; margin: 2rem auto; padding: 0 1rem; color: #1d1d1f; }
  h1 { font-size: 1.4rem; margin-bottom: 0.2rem; }
  #state { color: #6e6e73; margin-top: 0; }
  #lines { list-style: none; margin: 0; padding: 0.5rem 0.75rem; height: 20rem; overflow-y: auto;
           border: 1px solid #d2d2d7; border-radius: 8px; background: #fbfbfd; }
  #lines li { padding: 0.15rem 0; overflow-wrap: anywhere; }
  #lines li.own { color: #0b5cad; }
  form { display: flex; gap: 0.5rem; margin-top: 0.6rem; }
  #text { flex: 1; }
  input, button { font: inherit; padding: 0.35rem 0.5rem; }
</style>
</head>
<body data-state="connecting">
<h1>coral chat</h1>
<p id="state">connecting&hellip;</p>
<ul id="lines"></ul>
<form id="say">
  <input id="name" size="10" aria-label="your name">
  <input id="text" autocomplete="off" maxlength="1000" aria-label="message" autofocus>
  <button>Send</button>
</form>
<script>
"use strict";
const lines = document.getElementById("lines");
const state = document.getElementById("state");
const name = document.getElementById("name");
const text = document.getElementById("text");
name.value = new URLSearchParams(location.search).get("name") || "guest-" + Math.floor(Math.random() * 1000);

function show(line) {
  const item = document.createElement("li");
  item.textContent = line;
  if (line.startsWith(name.value + ": ")) item.className = "own";
  lines.append(item);
  lines.scrollTop = lines.scrollHeight;
}

const socket = new WebSocket((location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/chat/ws");
socket.onopen = () => {
  state.textContent = "connected";
  document.body.dataset.state = "open";
};
socket.onmessage = (event) => show(event.data);
socket.onclose = (event) => {
  state.textContent = "disconnected (" + event.code + (event.reason ? ": " + event.reason : "") + ")";
  document.body.dataset.state = "closed";
};
document.getElementById("say").addEventListener("submit", (event) => {
  event.preventDefault();
  if (text.value === "" || socket.readyState !== WebSocket.OPEN) return;
  socket.send(name.value + ": " + text.value);
  text.value = "";
});
</script>
</body>
</html>
)page";

}  // namespace net_demo::http_demo
