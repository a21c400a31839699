// Loaded with `node --require`: a server that listens on a port alone listens on 127.0.0.1,
// so the reference MCP server's HTTP transport stays on this machine in the tests.
const net = require("net");
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  if ((typeof args[0] === "number" || typeof args[0] === "string") && typeof args[1] !== "string") {
    args.splice(1, 0, "127.0.0.1");
  }
  return listen.apply(this, args);
};
