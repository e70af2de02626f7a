/*
 * The receipt verifier's pure core: no DOM, no network. Exposed as the global RngVerify.
 *
 * What it implements, and where the rule comes from (docs/verify-page.md lists them too):
 * - receipt files "rng-service-receipt/v1" (docs/log-format.md, "Receipts");
 * - C2SP signed-note: note syntax, Ed25519 verifier keys <name>+<key ID>+<base64(0x01 || key)>,
 *   key IDs SHA-256(name || 0x0A || type || key)[:4]; unknown keys' signatures are ignored,
 *   every line of a known key is verified whatever the order and a bad one rejects the note,
 *   two lines of one log key are refused (stricter than Go's note.Open, as
 *   rng_service/log/note.py; docs/log-format.md, "Opening a signed note");
 * - C2SP tlog-checkpoint: origin, tree size, base64 root, extension lines;
 * - the origin rule of rng-audit (rng_service/audit/verify.py, pinned_origin): the origin the
 *   person typed, else the one name all the given log keys share;
 * - RFC 6962 section 2.1 hashing (leaf 0x00, node 0x01) and the RFC 9162 section 2.1.3.2
 *   (inclusion) and 2.1.4.2 (consistency) verification algorithms (as rng_service/log/merkle.py);
 * - RFC 8785 canonical JSON of entries (sorted keys, ECMAScript number and string forms);
 * - C2SP tlog-cosignature cosignature/v1: key type 0x04, 8-byte timestamp, the signed message
 *   "cosignature/v1\ntime <t>\n" || checkpoint text; the witness rule of rng-audit
 *   (rng_service/audit/witnesses.py: K distinct witness keys on a checkpoint that covers the
 *   receipt, no time more than 300 s ahead; every line of a known witness verified).
 *
 * Ed25519: the browser's WebCrypto when a feature test passes, else the vendored, pinned
 * @noble/ed25519 1.6.0 (vendor/README.md). Every function that checks something returns a
 * step {status: "pass" | "fail" | "skip", message} in words a person can act on.
 */
(function (global) {
  "use strict";

  var enc = new TextEncoder();
  var RECEIPT_FORMAT = "rng-service-receipt/v1";
  var CONSISTENCY_FORMAT = "rng-audit-consistency/v1";
  var ALG_ED25519 = 0x01;
  var ALG_COSIGNATURE_V1 = 0x04;
  var MAX_SIGNATURES = 100;
  var MAX_CLOCK_SKEW_SECONDS = 300;
  var MAX_TIMESTAMP = (1n << 63n) - 1n;
  /* The link form: "#receipt-z=" + base64url(deflate-raw(receipt file bytes)). */
  var LINK_PARAM = "receipt-z";
  var LINK_PLAIN_PARAM = "receipt";
  var MAX_FRAGMENT_CHARS = 16384;
  var MAX_LINK_RECEIPT_BYTES = 1 << 20;

  function VerifyError(message) {
    this.name = "VerifyError";
    this.message = message;
  }
  VerifyError.prototype = Object.create(Error.prototype);

  // -- bytes ------------------------------------------------------------------------------------

  function hexToBytes(text, what) {
    if (typeof text !== "string" || !/^(?:[0-9a-fA-F]{2})*$/.test(text)) {
      throw new VerifyError(what + " is not a hexadecimal string");
    }
    var out = new Uint8Array(text.length / 2);
    for (var i = 0; i < out.length; i++) out[i] = parseInt(text.substr(i * 2, 2), 16);
    return out;
  }

  function bytesToHex(bytes) {
    var s = "";
    for (var i = 0; i < bytes.length; i++) s += (bytes[i] < 16 ? "0" : "") + bytes[i].toString(16);
    return s;
  }

  var B64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

  /* Strict standard base64 with padding (RFC 4648 section 4), as Python's validate=True. */
  function base64ToBytes(text, what) {
    if (typeof text !== "string" || !B64.test(text)) {
      throw new VerifyError(what + " is not base64");
    }
    var bin = atob(text);
    var out = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
    return out;
  }

  function bytesToBase64(bytes) {
    var bin = "";
    for (var i = 0; i < bytes.length; i += 0x8000) {
      bin += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
    }
    return btoa(bin);
  }

  function concat() {
    var total = 0, i;
    for (i = 0; i < arguments.length; i++) total += arguments[i].length;
    var out = new Uint8Array(total), at = 0;
    for (i = 0; i < arguments.length; i++) {
      out.set(arguments[i], at);
      at += arguments[i].length;
    }
    return out;
  }

  function equalBytes(a, b) {
    if (a.length !== b.length) return false;
    var d = 0;
    for (var i = 0; i < a.length; i++) d |= a[i] ^ b[i];
    return d === 0;
  }

  async function sha256(bytes) {
    return new Uint8Array(await global.crypto.subtle.digest("SHA-256", bytes));
  }

  function utf8(bytes, what) {
    try {
      return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
    } catch (e) {
      throw new VerifyError(what + " is not UTF-8 text");
    }
  }

  // -- Ed25519: WebCrypto, or the vendored library -----------------------------------------------

  /* RFC 8032 section 7.1, TEST 1 (empty message). */
  var KAT_KEY = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a";
  var KAT_SIG =
    "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701c" +
    "f9b46bd25bf5f0595bbe24655141438e7a100b";

  var ed25519 = { name: null, verify: null };

  async function webCryptoVerify(publicKey, signature, message) {
    try {
      var key = await global.crypto.subtle.importKey(
        "raw", publicKey, { name: "Ed25519" }, false, ["verify"]);
      return await global.crypto.subtle.verify({ name: "Ed25519" }, key, signature, message);
    } catch (e) {
      return false;
    }
  }

  async function nobleVerify(publicKey, signature, message) {
    try {
      return (await global.nobleEd25519.verify(signature, message, publicKey)) === true;
    } catch (e) {
      return false;
    }
  }

  async function knownAnswer(fn) {
    var key = hexToBytes(KAT_KEY, "key"), sig = hexToBytes(KAT_SIG, "signature");
    var good = await fn(key, sig, new Uint8Array(0));
    var bad = await fn(key, sig, new Uint8Array([0]));
    return good === true && bad === false;
  }

  /*
   * Chooses the Ed25519 implementation: the browser's own (WebCrypto "Ed25519") when it
   * verifies RFC 8032's test 1 and refuses it for another message; otherwise the vendored one,
   * which must pass the same test. ``force`` ("webcrypto" | "noble" | "") overrides for tests.
   */
  async function selectEd25519(force) {
    var hasSubtle = !!(global.crypto && global.crypto.subtle);
    if (!hasSubtle) {
      ed25519 = { name: null, verify: null };
      throw new VerifyError(
        "This browser does not offer cryptography to this page (it was opened over plain HTTP " +
        "from another computer, which browsers do not treat as secure). Open the page from a " +
        "saved file, from https://, or from this computer's own address (127.0.0.1).");
    }
    if (force !== "noble" && (await knownAnswer(webCryptoVerify))) {
      ed25519 = { name: "webcrypto", verify: webCryptoVerify };
    } else if (force !== "webcrypto" && global.nobleEd25519 &&
               (await knownAnswer(nobleVerify))) {
      ed25519 = { name: "noble", verify: nobleVerify };
    } else {
      ed25519 = { name: null, verify: null };
      throw new VerifyError("No working Ed25519 signature check is available in this browser.");
    }
    return ed25519.name;
  }

  function ed25519Name() {
    return ed25519.name;
  }

  // -- keys (C2SP signed-note) -------------------------------------------------------------------

  function isValidKeyName(name) {
    return name.length > 0 && name.indexOf("+") < 0 && !/\s/u.test(name);
  }

  async function keyId(name, alg, publicKey) {
    var digest = await sha256(concat(enc.encode(name), new Uint8Array([0x0a, alg]), publicKey));
    return ((digest[0] << 24) >>> 0) + (digest[1] << 16) + (digest[2] << 8) + digest[3];
  }

  function hex8(n) {
    return ("00000000" + n.toString(16)).slice(-8);
  }

  /* One verifier key <name>+<8 hex key id>+<base64(alg || 32-byte key)>. */
  async function parseVerifierKey(text, alg) {
    var what = alg === ALG_ED25519 ? "log verifier key" : "witness key";
    var first = text.indexOf("+");
    var second = first < 0 ? -1 : text.indexOf("+", first + 1);
    var name = first < 0 ? text : text.slice(0, first);
    var idHex = first < 0 ? "" : text.slice(first + 1, second < 0 ? undefined : second);
    var key64 = second < 0 ? "" : text.slice(second + 1);
    if (!isValidKeyName(name) || !/^[0-9a-fA-F]{8}$/.test(idHex) || !key64) {
      throw new VerifyError("“" + text + "” is not a " + what +
        " (expected name+8 hex digits+base64 key)");
    }
    var raw;
    try {
      raw = base64ToBytes(key64, "key");
    } catch (e) {
      throw new VerifyError("the " + what + " “" + text + "” does not end in a base64 key");
    }
    if (raw.length < 1 || raw[0] !== alg) {
      throw new VerifyError("“" + text + "” is not a " + what + ": its type is " +
        (raw.length ? "0x" + ("0" + raw[0].toString(16)).slice(-2) : "missing") +
        (alg === ALG_ED25519
          ? " (a log key is type 0x01; a witness key, type 0x04, belongs in the witness box)"
          : " (a witness key is type 0x04, Ed25519 cosignature/v1; a log key cannot check " +
            "cosignatures)"));
    }
    if (raw.length !== 33) {
      throw new VerifyError("the " + what + " “" + text + "” holds a key of " +
        (raw.length - 1) + " bytes; Ed25519 keys are 32 bytes");
    }
    var publicKey = raw.slice(1);
    var id = await keyId(name, alg, publicKey);
    if (id !== parseInt(idHex, 16)) {
      throw new VerifyError("the " + what + " “" + text + "” is damaged: its key ID " + idHex +
        " does not match its key (" + hex8(id) + ")");
    }
    return { name: name, id: id, publicKey: publicKey, text: name + "+" + hex8(id) + "+" + key64 };
  }

  /* Keys one per line (blank lines and lines starting with # ignored). */
  async function parseKeyList(text, alg) {
    var keys = [];
    var lines = (text || "").split(/\r?\n/);
    for (var i = 0; i < lines.length; i++) {
      var line = lines[i].trim();
      if (!line || line.charAt(0) === "#") continue;
      keys.push(await parseVerifierKey(line, alg));
    }
    return keys;
  }

  /* rng-audit's rule (rng_service.audit.verify.pinned_origin). */
  function pinnedOrigin(keys, typed) {
    var origin = (typed || "").trim();
    if (origin) return { origin: origin, source: "the origin you entered" };
    var names = [];
    keys.forEach(function (k) { if (names.indexOf(k.name) < 0) names.push(k.name); });
    names.sort();
    if (names.length === 0) throw new VerifyError("Enter the log's verifier key first.");
    if (names.length > 1) {
      throw new VerifyError("The log keys you entered have different names (" +
        names.join(", ") + "), so none of them tells which log to expect: enter the log's " +
        "origin (the first line of its checkpoints) in the Origin box.");
    }
    return { origin: names[0], source: "the name of the log key" };
  }

  // -- signed notes and checkpoints --------------------------------------------------------------

  function parseNote(text) {
    for (var i = 0; i < text.length; i++) {
      var c = text.charCodeAt(i);
      if (c < 0x20 && c !== 0x0a) {
        throw new VerifyError("the signed checkpoint contains a control character");
      }
    }
    var split = text.lastIndexOf("\n\n");
    if (split < 0) throw new VerifyError("the signed checkpoint has no blank line before its signatures");
    var body = text.slice(0, split + 1), block = text.slice(split + 2);
    if (!block || block.charAt(block.length - 1) !== "\n") {
      throw new VerifyError("the signed checkpoint has no signature lines");
    }
    var lines = block.slice(0, -1).split("\n");
    if (lines.length > MAX_SIGNATURES) {
      throw new VerifyError("the signed checkpoint has more than " + MAX_SIGNATURES + " signatures");
    }
    var signatures = lines.map(function (line, n) {
      if (line.slice(0, 2) !== "\u2014 ") {
        throw new VerifyError("signature line " + (n + 1) + " does not start with an em dash");
      }
      var rest = line.slice(2), sp = rest.indexOf(" ");
      var name = sp < 0 ? rest : rest.slice(0, sp), encoded = sp < 0 ? "" : rest.slice(sp + 1);
      if (!isValidKeyName(name) || !encoded) {
        throw new VerifyError("signature line " + (n + 1) + " has no valid key name and signature");
      }
      var raw = base64ToBytes(encoded, "signature line " + (n + 1));
      if (raw.length < 5) throw new VerifyError("signature line " + (n + 1) + " is too short");
      var id = ((raw[0] << 24) >>> 0) + (raw[1] << 16) + (raw[2] << 8) + raw[3];
      return { name: name, id: id, signature: raw.slice(4) };
    });
    return { text: body, signatures: signatures };
  }

  function parseCheckpoint(body) {
    if (body.charAt(body.length - 1) !== "\n") throw new VerifyError("the checkpoint text does not end with a newline");
    var lines = body.slice(0, -1).split("\n");
    if (lines.length < 3) throw new VerifyError("the checkpoint has no origin, size and root hash");
    if (!lines[0]) throw new VerifyError("the checkpoint's origin line is empty");
    if (!/^(?:0|[1-9][0-9]*)$/.test(lines[1]) || BigInt(lines[1]) >= (1n << 64n)) {
      throw new VerifyError("the checkpoint's tree size “" + lines[1] + "” is not a number");
    }
    var root = base64ToBytes(lines[2], "the checkpoint's root hash");
    if (root.length !== 32 || bytesToBase64(root) !== lines[2]) {
      throw new VerifyError("the checkpoint's root hash is not 32 bytes in canonical base64");
    }
    for (var i = 3; i < lines.length; i++) {
      if (!lines[i]) throw new VerifyError("the checkpoint has an empty extension line");
    }
    var size = Number(lines[1]);
    if (!Number.isSafeInteger(size)) throw new VerifyError("the checkpoint's tree size is too large for this page");
    return { origin: lines[0], size: size, root: root, text: body };
  }

  /*
   * C2SP signed-note verification with the log keys: unknown keys are ignored; every line of a
   * known key is verified, whatever the order, and a bad one rejects the note ({bad}); a second
   * line of one key is refused ({twice}): stricter than Go's note.Open, which checks only a
   * key's first line. At least one known key must have signed.
   */
  async function openNote(noteText, keys) {
    var note = parseNote(noteText);
    var payload = enc.encode(note.text);
    var verified = [], unknown = [], seen = {};
    for (var i = 0; i < note.signatures.length; i++) {
      var sig = note.signatures[i];
      var key = keys.filter(function (k) { return k.name === sig.name && k.id === sig.id; })[0];
      if (!key) {
        unknown.push(sig.name + "+" + hex8(sig.id));
        continue;
      }
      if (!(await ed25519.verify(key.publicKey, sig.signature, payload))) {
        return { ok: false, bad: key, note: note };
      }
      if (seen[key.text]) return { ok: false, twice: key, note: note };
      seen[key.text] = true;
      verified.push(key);
    }
    return { ok: verified.length > 0, verified: verified, unknown: unknown, note: note };
  }

  // -- RFC 6962 / RFC 9162 -----------------------------------------------------------------------

  async function leafHash(data) {
    return sha256(concat(new Uint8Array([0]), data));
  }

  async function nodeHash(left, right) {
    return sha256(concat(new Uint8Array([1]), left, right));
  }

  /* How many hashes an inclusion proof of leaf ``index`` in a tree of ``size`` has. */
  function inclusionProofLength(index, size) {
    var last = BigInt(size - 1), i = BigInt(index);
    var inner = (i ^ last).toString(2).length;
    if ((i ^ last) === 0n) inner = 0;
    var border = (i >> BigInt(inner)).toString(2).split("").filter(function (b) { return b === "1"; }).length;
    return inner + border;
  }

  /* RFC 9162 section 2.1.3.2: the root the proof implies; throws with the reason. */
  async function rootFromInclusionProof(leaf, index, size, proof) {
    if (size <= 0 || index < 0 || index >= size) {
      throw new VerifyError("entry " + index + " cannot be in a log of " + size + " entries");
    }
    var fn = BigInt(index), sn = BigInt(size - 1), r = leaf;
    for (var i = 0; i < proof.length; i++) {
      if (sn === 0n) {
        throw new VerifyError("the proof has " + proof.length + " hashes, more than the " +
          inclusionProofLength(index, size) + " an entry at position " + index +
          " of a log of " + size + " entries has");
      }
      if ((fn & 1n) === 1n || fn === sn) {
        r = await nodeHash(proof[i], r);
        while ((fn & 1n) === 0n && fn !== 0n) {
          fn >>= 1n;
          sn >>= 1n;
        }
      } else {
        r = await nodeHash(r, proof[i]);
      }
      fn >>= 1n;
      sn >>= 1n;
    }
    if (sn !== 0n) {
      throw new VerifyError("the proof is incomplete: it has " + proof.length + " hashes, but " +
        "an entry at position " + index + " of a log of " + size + " entries needs " +
        inclusionProofLength(index, size));
    }
    return r;
  }

  /* RFC 9162 section 2.1.4.2; returns nothing, throws with the reason. */
  async function verifyConsistency(size1, size2, proof, root1, root2) {
    if (!(0 <= size1 && size1 <= size2)) {
      throw new VerifyError("the earlier checkpoint (" + size1 + " entries) is larger than the " +
        "later one (" + size2 + "): the log was cut back, or these are two different logs");
    }
    if (size1 === size2) {
      if (proof.length) throw new VerifyError("a proof between checkpoints of one size must be empty");
      if (!equalBytes(root1, root2)) {
        throw new VerifyError("the two checkpoints have the same size but different roots: the " +
          "log has two different histories (a fork)");
      }
      return;
    }
    if (size1 === 0) {
      if (proof.length) throw new VerifyError("a proof from the empty log must be empty");
      return;
    }
    if (!proof.length) throw new VerifyError("the consistency proof is empty");
    var path = proof.slice();
    if ((size1 & (size1 - 1)) === 0) path.unshift(root1);
    var fn = BigInt(size1 - 1), sn = BigInt(size2 - 1);
    while ((fn & 1n) === 1n) {
      fn >>= 1n;
      sn >>= 1n;
    }
    var fr = path[0], sr = path[0];
    for (var i = 1; i < path.length; i++) {
      var c = path[i];
      if (sn === 0n) throw new VerifyError("the consistency proof has too many hashes");
      if ((fn & 1n) === 1n || fn === sn) {
        fr = await nodeHash(c, fr);
        sr = await nodeHash(c, sr);
        while ((fn & 1n) === 0n && fn !== 0n) {
          fn >>= 1n;
          sn >>= 1n;
        }
      } else {
        sr = await nodeHash(sr, c);
      }
      fn >>= 1n;
      sn >>= 1n;
    }
    if (sn !== 0n) throw new VerifyError("the consistency proof is incomplete (too few hashes)");
    if (!equalBytes(fr, root1)) {
      throw new VerifyError("the proof does not lead to the earlier checkpoint's root: the later " +
        "checkpoint does not extend it (a fork, or an altered proof)");
    }
    if (!equalBytes(sr, root2)) {
      throw new VerifyError("the proof does not lead to the later checkpoint's root: the later " +
        "checkpoint does not extend the earlier one (a fork, or an altered proof)");
    }
  }

  // -- canonical entries (RFC 8785 as docs/log-format.md restricts it) ---------------------------

  function canonicalJson(value) {
    if (value === null || typeof value === "boolean" || typeof value === "string") {
      return JSON.stringify(value);
    }
    if (typeof value === "number") {
      if (!Number.isSafeInteger(value)) throw new VerifyError("the entry holds a number that is not an exact integer");
      return JSON.stringify(value);
    }
    if (Array.isArray(value)) return "[" + value.map(canonicalJson).join(",") + "]";
    var keys = Object.keys(value).sort(function (a, b) { return a < b ? -1 : a > b ? 1 : 0; });
    return "{" + keys.map(function (k) {
      return JSON.stringify(k) + ":" + canonicalJson(value[k]);
    }).join(",") + "}";
  }

  var ENTRY_FIELDS = {
    1: ["client", "generator", "index", "kind", "outcome", "params", "profile_sha256",
        "request_id", "round_id", "session_id", "table_id", "time", "v"],
  };
  ENTRY_FIELDS[2] = ENTRY_FIELDS[1].concat(["slot", "table_prev", "table_seq"]).sort();
  // Format 3 adds the root of the map of table heads (docs/log-format.md, "Table map").
  ENTRY_FIELDS[3] = ENTRY_FIELDS[2].concat(["table_map"]).sort();
  var MAP_ROOT = /^[0-9a-f]{64}$/;

  function decodeEntry(bytes) {
    var text = utf8(bytes, "the entry");
    var entry;
    try {
      entry = JSON.parse(text);
    } catch (e) {
      throw new VerifyError("the entry is not JSON");
    }
    if (entry === null || typeof entry !== "object" || Array.isArray(entry)) {
      throw new VerifyError("the entry is not a JSON object");
    }
    if (!equalBytes(enc.encode(canonicalJson(entry)), bytes)) {
      throw new VerifyError("the entry is not written in the log's canonical form");
    }
    var fields = Number.isSafeInteger(entry.v) && ENTRY_FIELDS.hasOwnProperty(entry.v) ? ENTRY_FIELDS[entry.v] : null;
    if (!fields) throw new VerifyError("the entry has an unknown format version " + JSON.stringify(entry.v));
    if (Object.keys(entry).sort().join(",") !== fields.join(",")) {
      throw new VerifyError("the entry's fields are not those of entry format " + entry.v);
    }
    if (entry.v === 3 && !(typeof entry.table_map === "string" && MAP_ROOT.test(entry.table_map))) {
      throw new VerifyError("the entry's table_map (format 3: the root of the map of table heads) " +
        "is not 64 lowercase hex characters: " + JSON.stringify(entry.table_map));
    }
    return entry;
  }

  // -- files -------------------------------------------------------------------------------------

  function parseReceipt(text) {
    var data;
    try {
      data = JSON.parse(text);
    } catch (e) {
      throw new VerifyError("This is not a receipt file: it is not JSON (" + e.message + ").");
    }
    if (!data || typeof data !== "object" || Array.isArray(data)) {
      throw new VerifyError("This is not a receipt file: it is not a JSON object.");
    }
    if (data.format !== RECEIPT_FORMAT) {
      throw new VerifyError("This is not a receipt file: its format is " +
        JSON.stringify(data.format === undefined ? null : data.format) + ", not \"" +
        RECEIPT_FORMAT + "\".");
    }
    ["index", "tree_size"].forEach(function (f) {
      if (!Number.isSafeInteger(data[f]) || data[f] < 0) {
        throw new VerifyError("The receipt's " + f + " is not a whole number.");
      }
    });
    if (typeof data.checkpoint !== "string") throw new VerifyError("The receipt has no signed checkpoint.");
    if (!Array.isArray(data.inclusion_proof)) throw new VerifyError("The receipt has no inclusion proof list.");
    function hash(value, what) {
      var b = hexToBytes(value, "The receipt's " + what);
      if (b.length !== 32) throw new VerifyError("The receipt's " + what + " is not a 32-byte hash.");
      return b;
    }
    var entry;
    try {
      entry = base64ToBytes(data.entry, "entry");
    } catch (e) {
      throw new VerifyError("The receipt's entry is not base64.");
    }
    return {
      index: data.index,
      treeSize: data.tree_size,
      entry: entry,
      leafHash: hash(data.leaf_hash, "leaf_hash"),
      proof: data.inclusion_proof.map(function (h, i) { return hash(h, "inclusion_proof[" + i + "]"); }),
      checkpoint: data.checkpoint,
    };
  }

  function parseConsistency(text) {
    var data;
    try {
      data = JSON.parse(text);
    } catch (e) {
      throw new VerifyError("This is not a consistency file: it is not JSON (" + e.message + ").");
    }
    if (!data || data.format !== CONSISTENCY_FORMAT) {
      throw new VerifyError("This is not a consistency file (expected \"format\": \"" +
        CONSISTENCY_FORMAT + "\"; rng-audit consistency writes one).");
    }
    if (typeof data.old !== "string" || typeof data["new"] !== "string" || !Array.isArray(data.proof)) {
      throw new VerifyError("The consistency file needs \"old\" and \"new\" signed checkpoints and a \"proof\" list.");
    }
    return {
      old: data.old,
      "new": data["new"],
      proof: data.proof.map(function (h, i) {
        var b = hexToBytes(h, "proof[" + i + "]");
        if (b.length !== 32) throw new VerifyError("proof[" + i + "] is not a 32-byte hash");
        return b;
      }),
    };
  }

  // -- witnesses (C2SP tlog-cosignature) ---------------------------------------------------------

  /* The valid cosignatures of the given witness keys on one parsed note: one per witness, the
     newest; throws if a known witness's line is malformed, fails to verify or is in the future. */
  async function checkCosignatures(note, witnesses, now) {
    var best = {};
    for (var i = 0; i < note.signatures.length; i++) {
      var sig = note.signatures[i];
      var w = witnesses.filter(function (k) { return k.name === sig.name && k.id === sig.id; })[0];
      if (!w) continue;
      var label = w.name + "+" + hex8(w.id);
      if (sig.signature.length !== 72) {
        throw new VerifyError("the cosignature of witness " + label + " is malformed");
      }
      var t = 0n;
      for (var j = 0; j < 8; j++) t = (t << 8n) | BigInt(sig.signature[j]);
      if (t > MAX_TIMESTAMP) throw new VerifyError("the cosignature of witness " + label + " has an impossible time");
      var message = concat(enc.encode("cosignature/v1\ntime " + t.toString() + "\n"), enc.encode(note.text));
      if (!(await ed25519.verify(w.publicKey, sig.signature.slice(8), message))) {
        throw new VerifyError("the cosignature of witness " + label + " does not match: the " +
          "checkpoint or the cosignature was altered");
      }
      if (t > BigInt(now + MAX_CLOCK_SKEW_SECONDS)) {
        throw new VerifyError("the cosignature of witness " + label + " is dated " + utcTime(Number(t)) +
          ", in the future by this computer's clock");
      }
      if (!best[label] || best[label].time < Number(t)) best[label] = { witness: label, time: Number(t) };
    }
    return Object.keys(best).map(function (k) { return best[k]; })
      .sort(function (a, b) { return b.time - a.time; });
  }

  function utcTime(seconds) {
    var d = new Date(seconds * 1000);
    return isNaN(d.getTime()) ? "(out of range)" : d.toISOString().replace(".000Z", "Z").replace("T", " ") + " UTC";
  }

  // -- the receipt, step by step ---------------------------------------------------------------

  var STEP_TITLES = {
    receipt: "Receipt read",
    signature: "Checkpoint signature",
    origin: "Log origin",
    leaf: "Leaf hash (the outcome's fingerprint)",
    inclusion: "Inclusion proof (the outcome is in the signed log)",
    consistency: "Later checkpoint extends this one",
    witnesses: "Witness cosignatures",
  };
  var STEP_ORDER = ["receipt", "signature", "origin", "leaf", "inclusion", "consistency", "witnesses"];

  function Steps() {
    this.list = STEP_ORDER.map(function (id) {
      return { id: id, title: STEP_TITLES[id], status: "pending", message: "" };
    });
  }
  Steps.prototype.set = function (id, status, message) {
    var s = this.list.filter(function (x) { return x.id === id; })[0];
    s.status = status;
    s.message = message;
  };
  Steps.prototype.failed = function () {
    return this.list.some(function (s) { return s.status === "fail"; });
  };
  Steps.prototype.finish = function () {
    var stopped = false;
    this.list.forEach(function (s) {
      if (s.status === "fail") stopped = true;
      else if (s.status === "pending") {
        s.status = "skip";
        s.message = stopped ? "Not checked: an earlier check failed." : s.message;
      }
    });
    return this;
  };

  /* Verifies a receipt. Returns {ok, steps, entry, checkpoint, engine}; never throws. */
  async function verifyReceipt(input) {
    var steps = new Steps();
    var result = { ok: false, steps: steps.list, entry: null, checkpoint: null, engine: ed25519.name };
    var receipt, keys, witnesses = [], origin, checkpoint;
    var now = input.now === undefined ? Math.floor(Date.now() / 1000) : input.now;
    try {
      receipt = parseReceipt(input.receipt || "");
      steps.set("receipt", "pass", "A receipt for log entry " + receipt.index + ", in a log of " +
        receipt.treeSize + " entries, with a proof of " + receipt.proof.length + " hashes.");
    } catch (e) {
      steps.set("receipt", "fail", String(e.message || e));
      steps.finish();
      return result;
    }
    // Signature
    try {
      keys = await parseKeyList(input.logKeys, ALG_ED25519);
      if (!keys.length) throw new VerifyError("Enter the log's verifier key: without it nothing can be checked.");
      var opened = await openNote(receipt.checkpoint, keys);
      var known = keys.map(function (k) { return k.name + "+" + hex8(k.id); }).join(", ");
      if (opened.bad) {
        throw new VerifyError("The signature of the log key " + opened.bad.name + "+" + hex8(opened.bad.id) +
          " does not match the checkpoint: the checkpoint was altered after it was signed.");
      }
      if (opened.twice) {
        throw new VerifyError("The checkpoint carries two signature lines of the log key " +
          opened.twice.name + "+" + hex8(opened.twice.id) + ": a log key signs a checkpoint once, " +
          "so this one is refused.");
      }
      if (!opened.ok) {
        throw new VerifyError("The checkpoint is not signed by the log key you entered (" + known +
          "). Either that is not this log's key, or the receipt was made up. The checkpoint " +
          "names the key(s) " + (opened.unknown.join(", ") || "none") + ".");
      }
      checkpoint = parseCheckpoint(opened.note.text);
      result.checkpoint = checkpoint;
      steps.set("signature", "pass", "Signed by " + opened.verified.map(function (k) {
        return k.name + "+" + hex8(k.id);
      }).join(", ") + " (Ed25519, checked with " + engineLabel(ed25519.name) + ").");
    } catch (e) {
      steps.set("signature", "fail", String(e.message || e));
      steps.finish();
      return result;
    }
    // Origin
    try {
      origin = pinnedOrigin(keys, input.origin);
      if (checkpoint.origin !== origin.origin) {
        throw new VerifyError("This checkpoint is from the log “" + checkpoint.origin +
          "”, not from the log you expect, “" + origin.origin + "” (" + origin.source + ").");
      }
      steps.set("origin", "pass", "The checkpoint is from the log “" + checkpoint.origin + "” (" +
        origin.source + ").");
    } catch (e) {
      steps.set("origin", "fail", String(e.message || e));
      steps.finish();
      return result;
    }
    // Leaf hash and entry
    var entry;
    try {
      var computed = await leafHash(receipt.entry);
      if (!equalBytes(computed, receipt.leafHash)) {
        throw new VerifyError("The outcome in this receipt was changed: its fingerprint " +
          "(SHA-256 leaf hash) is " + bytesToHex(computed).slice(0, 16) + "…, but the receipt " +
          "records " + bytesToHex(receipt.leafHash).slice(0, 16) + "….");
      }
      entry = decodeEntry(receipt.entry);
      if (entry.index !== receipt.index) {
        throw new VerifyError("The entry says it is log entry " + entry.index +
          ", but the receipt says " + receipt.index + ".");
      }
      steps.set("leaf", "pass", "SHA-256(0x00 ‖ entry) = " + bytesToHex(computed) + ".");
    } catch (e) {
      steps.set("leaf", "fail", String(e.message || e));
      steps.finish();
      return result;
    }
    // Inclusion
    try {
      if (checkpoint.size !== receipt.treeSize) {
        throw new VerifyError("The receipt says the log had " + receipt.treeSize +
          " entries, but its signed checkpoint says " + checkpoint.size + ".");
      }
      var root = await rootFromInclusionProof(receipt.leafHash, receipt.index, checkpoint.size, receipt.proof);
      if (!equalBytes(root, checkpoint.root)) {
        throw new VerifyError("The proof does not lead to the log's signed root: the receipt's " +
          "proof (or its outcome) was altered.");
      }
      steps.set("inclusion", "pass", "Entry " + receipt.index + " is in the log of " + checkpoint.size +
        " entries whose root the checkpoint signs (" + receipt.proof.length + " hashes, RFC 9162 2.1.3.2).");
    } catch (e) {
      var m = String(e.message || e);
      steps.set("inclusion", "fail", m.charAt(0).toUpperCase() + m.slice(1) + (/[.)]$/.test(m) ? "" : "."));
      steps.finish();
      return result;
    }
    // A later checkpoint (optional)
    var witnessed = [{ what: "the receipt's checkpoint", note: parseNote(receipt.checkpoint), size: checkpoint.size }];
    if ((input.consistency || "").trim()) {
      var c = await checkConsistency({
        consistency: input.consistency, logKeys: input.logKeys, origin: input.origin,
      }, keys);
      var earlier = c.old;
      if (c.ok && (earlier.size !== checkpoint.size || !equalBytes(earlier.root, checkpoint.root))) {
        c = { ok: false, message: "The consistency file starts from a checkpoint of " + earlier.size +
          " entries, not from this receipt's checkpoint (" + checkpoint.size + " entries): make it " +
          "with rng-audit consistency --old RECEIPT." };
      }
      if (!c.ok) {
        steps.set("consistency", "fail", c.message);
        steps.finish();
        return result;
      }
      steps.set("consistency", "pass", c.message);
      witnessed.push({ what: "the later checkpoint", note: c.newNote, size: c["new"].size });
    } else {
      steps.set("consistency", "skip", "No later checkpoint was given (optional).");
    }
    // Witnesses
    try {
      witnesses = await parseKeyList(input.witnessKeys, ALG_COSIGNATURE_V1);
      var wanted = parseMinimum(input.minWitnesses, witnesses.length);
      if (!witnesses.length) {
        steps.set("witnesses", "skip", "No witness keys were given. Without them, " +
          "nothing here shows that the log was not later cut back or forked.");
      } else {
        var lines = [], best = null;
        for (var i = 0; i < witnessed.length; i++) {
          var cos = await checkCosignatures(witnessed[i].note, witnesses, now);
          cos.forEach(function (x) {
            lines.push(witnessed[i].what + " (" + witnessed[i].size + " entries) cosigned by " +
              x.witness + " at " + utcTime(x.time));
          });
          // Only a checkpoint that covers the receipt's tree counts (rng-audit's rule).
          if (cos.length >= wanted && wanted > 0 && witnessed[i].size >= receipt.treeSize) best = witnessed[i];
        }
        if (wanted > 0 && !best) {
          throw new VerifyError("No checkpoint covering this receipt is cosigned by " + wanted +
            " of the witness keys you entered" + (lines.length ? " (" + lines.join("; ") + ")" : "") +
            ". A receipt is issued before any witness sees its checkpoint: load a later " +
            "checkpoint file (rng-audit consistency --witnessed) that witnesses cosigned.");
        }
        steps.set("witnesses", "pass", (lines.length ? lines.join("; ") : "No cosignatures") +
          (best ? ". " + wanted + " of " + witnesses.length + " witnesses vouch for " + best.what + "." : ". (0 required.)"));
      }
    } catch (e) {
      steps.set("witnesses", "fail", String(e.message || e));
      steps.finish();
      return result;
    }
    steps.finish();
    result.ok = !steps.failed();
    result.entry = entry;
    return result;
  }

  function parseMinimum(text, count) {
    var t = (text === undefined || text === null ? "" : String(text)).trim();
    if (!t) return count ? 1 : 0;
    if (!/^[0-9]+$/.test(t) || Number(t) > count) {
      throw new VerifyError("The number of witnesses required must be a whole number from 0 to " +
        count + " (the number of witness keys entered).");
    }
    return Number(t);
  }

  function engineLabel(name) {
    return name === "webcrypto" ? "the browser's built-in Ed25519 (WebCrypto)"
      : name === "noble" ? "the vendored library noble-ed25519 1.6.0" : "nothing";
  }

  /* Two checkpoints and a consistency proof: does the later extend the earlier? */
  async function checkConsistency(input, parsedKeys) {
    var out = { ok: false, message: "", old: null, "new": null, newNote: null };
    try {
      var file = parseConsistency(input.consistency || "");
      var keys = parsedKeys || (await parseKeyList(input.logKeys, ALG_ED25519));
      if (!keys.length) throw new VerifyError("Enter the log's verifier key: without it nothing can be checked.");
      var origin = pinnedOrigin(keys, input.origin);
      var heads = [];
      var pairs = [["earlier", file.old], ["later", file["new"]]];
      for (var i = 0; i < pairs.length; i++) {
        var opened = await openNote(pairs[i][1], keys);
        if (!opened.ok) {
          throw new VerifyError("The " + pairs[i][0] + " checkpoint " + (opened.bad
            ? "has a signature that does not match: it was altered."
            : opened.twice ? "carries two signature lines of one log key: refused."
            : "is not signed by the log key you entered."));
        }
        var cp = parseCheckpoint(opened.note.text);
        if (cp.origin !== origin.origin) {
          throw new VerifyError("The " + pairs[i][0] + " checkpoint is from the log “" + cp.origin +
            "”, not from “" + origin.origin + "” (" + origin.source + ").");
        }
        heads.push(cp);
        if (i === 1) out.newNote = opened.note;
      }
      out.old = heads[0];
      out["new"] = heads[1];
      await verifyConsistency(heads[0].size, heads[1].size, file.proof, heads[0].root, heads[1].root);
      out.ok = true;
      out.message = "Yes: the later checkpoint (" + heads[1].size + " entries) extends the earlier one (" +
        heads[0].size + " entries); nothing of the earlier log was changed or removed " +
        "(RFC 9162 2.1.4.2, " + file.proof.length + " hashes).";
    } catch (e) {
      var m = String(e.message || e);
      out.message = /^[A-Z]/.test(m) ? m : "No: " + m + ".";
    }
    return out;
  }

  // -- the link form -----------------------------------------------------------------------------

  function base64urlToBytes(text) {
    if (!/^[A-Za-z0-9_-]*$/.test(text)) throw new VerifyError("The link is damaged: its receipt part has characters a link never carries.");
    var b64 = text.replace(/-/g, "+").replace(/_/g, "/");
    while (b64.length % 4) b64 += "=";
    return base64ToBytes(b64, "the link");
  }

  function bytesToBase64url(bytes) {
    return bytesToBase64(bytes).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  }

  async function inflateRaw(bytes, limit) {
    var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("deflate-raw"));
    var reader = stream.getReader(), chunks = [], total = 0;
    for (;;) {
      var part = await reader.read();
      if (part.done) break;
      total += part.value.length;
      if (total > limit) {
        await reader.cancel();
        throw new VerifyError("The link's receipt is larger than " + limit + " bytes once unpacked.");
      }
      chunks.push(part.value);
    }
    return concat.apply(null, chunks);
  }

  async function deflateRaw(bytes) {
    var stream = new Blob([bytes]).stream().pipeThrough(new CompressionStream("deflate-raw"));
    return new Uint8Array(await new Response(stream).arrayBuffer());
  }

  /* The receipt text a URL fragment carries, or null when it carries none. */
  async function receiptFromFragment(fragment) {
    var f = (fragment || "").replace(/^#/, "");
    if (!f) return null;
    if (f.length > MAX_FRAGMENT_CHARS) {
      throw new VerifyError("This link is " + f.length + " characters long after the #, more than the " +
        MAX_FRAGMENT_CHARS + " this page accepts. Ask for the receipt as a file and load it here.");
    }
    var params = new URLSearchParams(f);
    if (params.has(LINK_PARAM)) {
      var packed = base64urlToBytes(params.get(LINK_PARAM));
      var raw;
      try {
        raw = await inflateRaw(packed, MAX_LINK_RECEIPT_BYTES);
      } catch (e) {
        if (e instanceof VerifyError) throw e;
        throw new VerifyError("The link is damaged: its receipt part does not unpack (it was cut short or changed).");
      }
      return utf8(raw, "the link's receipt");
    }
    if (params.has(LINK_PLAIN_PARAM)) return utf8(base64urlToBytes(params.get(LINK_PLAIN_PARAM)), "the link's receipt");
    return null;
  }

  /* A link to ``base`` carrying ``receiptText`` (same form as rng-service call --verify-url). */
  async function linkFor(base, receiptText) {
    var fragment = LINK_PARAM + "=" + bytesToBase64url(await deflateRaw(enc.encode(receiptText)));
    if (fragment.length > MAX_FRAGMENT_CHARS) {
      throw new VerifyError("This receipt is " + fragment.length + " characters as a link, more than the " +
        MAX_FRAGMENT_CHARS + " a link may carry: share the receipt file instead.");
    }
    return base.split("#")[0] + "#" + fragment;
  }

  global.RngVerify = {
    RECEIPT_FORMAT: RECEIPT_FORMAT,
    CONSISTENCY_FORMAT: CONSISTENCY_FORMAT,
    MAX_FRAGMENT_CHARS: MAX_FRAGMENT_CHARS,
    VerifyError: VerifyError,
    selectEd25519: selectEd25519,
    ed25519Name: ed25519Name,
    engineLabel: engineLabel,
    verifyReceipt: verifyReceipt,
    checkConsistency: checkConsistency,
    receiptFromFragment: receiptFromFragment,
    /* For the tests (tests/vectors/signed_note/strict_open.json): */
    parseKeyList: parseKeyList,
    openNote: openNote,
    parseNote: parseNote,
    checkCosignatures: checkCosignatures,
    ALG_ED25519: ALG_ED25519,
    ALG_COSIGNATURE_V1: ALG_COSIGNATURE_V1,
    linkFor: linkFor,
    inclusionProofLength: inclusionProofLength,
    canonicalJson: canonicalJson,
    utcTime: utcTime,
  };
})(this);
