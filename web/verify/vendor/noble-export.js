/* The vendored @noble/ed25519 1.6.0's API (see cjs-shim.js and README.md). */
window.nobleEd25519 = exports;
