// The debug terminal's page: xterm.js on a WebSocket to the job's node (jobs/terminal/).
// Keys go out as binary frames, the window's size as a small JSON text frame; a refusal or
// an end comes back as a close code, said in words the page was given.
(function () {
  "use strict";
  const nonce = document.currentScript && document.currentScript.nonce;

  function start() {
    const box = document.getElementById("terminal");
    if (!box || !window.Terminal || !window.FitAddon) return;
    // xterm.js draws with <style> elements of its own: give them this page's nonce, the
    // only way such styles pass the page's Content-Security-Policy.
    const create = document.createElement.bind(document);
    document.createElement = function (name, options) {
      const element = create(name, options);
      if (nonce && String(name).toLowerCase() === "style") element.nonce = nonce;
      return element;
    };
    const words = JSON.parse(document.getElementById("terminal-words").textContent);
    const status = document.getElementById("terminal-status");
    const term = new window.Terminal({ cursorBlink: true, fontSize: 14, scrollback: 5000 });
    const fit = new window.FitAddon.FitAddon();
    term.loadAddon(fit);
    term.open(box);
    fit.fit();

    const scheme = window.location.protocol === "https:" ? "wss:" : "ws:";
    const size = "?rows=" + term.rows + "&cols=" + term.cols;
    const socket = new WebSocket(scheme + "//" + window.location.host + box.dataset.socket + size);
    socket.binaryType = "arraybuffer";
    const encoder = new TextEncoder();

    function say(state, text) {
      status.dataset.state = state;
      status.textContent = text;
      status.classList.toggle("text-danger", state === "closed");
    }
    function sendSize() {
      if (socket.readyState === WebSocket.OPEN) {
        socket.send(JSON.stringify({ rows: term.rows, cols: term.cols }));
      }
    }
    // The size measured before the page settled (styles, fonts) may be off: measure again
    // once connected, and whenever the box changes size.
    socket.addEventListener("open", function () {
      say("open", box.dataset.connected);
      fit.fit();
      sendSize();
      term.focus();
    });
    socket.addEventListener("message", function (event) {
      if (typeof event.data === "string") {
        const message = JSON.parse(event.data);
        if (message.error) term.write("\r\n" + message.error + "\r\n");
      } else {
        term.write(new Uint8Array(event.data));
      }
    });
    socket.addEventListener("close", function (event) {
      say("closed", words[String(event.code)] || box.dataset.closed);
    });
    term.onData(function (data) {
      if (socket.readyState === WebSocket.OPEN) socket.send(encoder.encode(data));
    });
    term.onBinary(function (data) {
      const bytes = Uint8Array.from(data, function (c) { return c.charCodeAt(0); });
      if (socket.readyState === WebSocket.OPEN) socket.send(bytes);
    });
    term.onResize(sendSize);
    new ResizeObserver(function () { fit.fit(); }).observe(box);
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
