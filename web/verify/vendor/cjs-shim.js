/* Lets the vendored CommonJS build of @noble/ed25519 1.6.0 (lib/index.js, unmodified) run as a
   classic script: it assigns its API to `exports` and asks `require("crypto")` for Node's crypto,
   which a browser does not have (undefined makes it use the browser's crypto.subtle for SHA-512).
   noble-export.js then names the API window.nobleEd25519. */
var exports = {};
function require() {
  return undefined;
}
