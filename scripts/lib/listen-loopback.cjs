// Preloaded with `node --require` (NODE_OPTIONS) into the reference MCP servers
// the tests start. They call `app.listen(PORT)`, which binds every interface;
// this makes a listen() that names no host bind 127.0.0.1 instead, so test
// servers are never reachable from outside the machine.
"use strict";
const net = require("net");
const original = net.Server.prototype.listen;
net.Server.prototype.listen = function listen(...args) {
  const first = args[0];
  if (typeof first === "number" || (typeof first === "string" && /^\d+$/.test(first))) {
    if (typeof args[1] !== "string") args.splice(1, 0, "127.0.0.1");
  } else if (first && typeof first === "object" && !Array.isArray(first) && first.path === undefined && first.host === undefined) {
    args[0] = { ...first, host: "127.0.0.1" };
  }
  return original.apply(this, args);
};
