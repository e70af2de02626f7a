/*
 * The page's wiring: inputs (paste, drop, file, URL fragment), the Verify button, the steps and
 * the outcome. All checking is RngVerify's (verify-core.js); all outcome display RngOutcome's.
 * "?ed25519=noble" (or "=webcrypto") forces one signature implementation, for tests.
 */
(function () {
  "use strict";

  var $ = function (id) { return document.getElementById(id); };
  var ready = null;

  var STATUS_WORDS = { pass: "Passed", fail: "Failed", skip: "Not checked", pending: "Not checked" };

  function readFileInto(input, target, after) {
    input.addEventListener("change", function () {
      var file = input.files && input.files[0];
      if (!file) return;
      file.text().then(function (text) {
        target.value = text;
        if (after) after(file.name);
      });
    });
  }

  function dropInto(target) {
    target.addEventListener("dragover", function (e) { e.preventDefault(); });
    target.addEventListener("drop", function (e) {
      var file = e.dataTransfer && e.dataTransfer.files && e.dataTransfer.files[0];
      if (!file) return;
      e.preventDefault();
      file.text().then(function (text) { target.value = text; });
    });
  }

  function engineChoice() {
    var q = new URLSearchParams(location.search).get("ed25519");
    return q === "noble" || q === "webcrypto" ? q : "";
  }

  function showSteps(steps) {
    var list = $("steps");
    list.textContent = "";
    steps.forEach(function (s) {
      var li = document.createElement("li");
      li.className = "step " + s.status;
      li.setAttribute("data-step", s.id);
      li.setAttribute("data-status", s.status);
      var head = document.createElement("strong");
      head.textContent = s.title + ": " + STATUS_WORDS[s.status];
      var msg = document.createElement("span");
      msg.className = "message";
      msg.textContent = s.message;
      li.appendChild(head);
      li.appendChild(document.createElement("br"));
      li.appendChild(msg);
      list.appendChild(li);
    });
  }

  function inputs() {
    return {
      receipt: $("receipt").value,
      logKeys: $("log-keys").value,
      origin: $("origin").value,
      witnessKeys: $("witness-keys").value,
      minWitnesses: $("min-witnesses").value,
      consistency: $("consistency").value,
    };
  }

  async function verify() {
    var started = performance.now();
    try {
      await ready;
    } catch (e) {
      return;
    }
    var input = inputs();
    var result = $("result"), consistency = $("consistency-result");
    result.hidden = true;
    consistency.hidden = true;
    $("outcome").hidden = true;
    $("outcome-body").textContent = "";
    if (!input.receipt.trim() && input.consistency.trim()) {
      var c = await RngVerify.checkConsistency(input);
      $("consistency-verdict").textContent = c.message;
      $("consistency-verdict").className = "verdict " + (c.ok ? "pass" : "fail");
      consistency.setAttribute("data-ok", String(c.ok));
      consistency.hidden = false;
      document.body.setAttribute("data-verify-ms", String(Math.round(performance.now() - started)));
      $("consistency-title").focus();
      return;
    }
    var r = await RngVerify.verifyReceipt(input);
    showSteps(r.steps);
    var failed = r.steps.filter(function (s) { return s.status === "fail"; })[0];
    $("verdict").textContent = r.ok
      ? "Verified: this outcome is in the log, signed by the key you entered."
      : "NOT verified. " + (failed ? failed.title + " failed: " + failed.message : "");
    $("verdict").className = "verdict " + (r.ok ? "pass" : "fail");
    result.setAttribute("data-ok", String(r.ok));
    result.setAttribute("data-failed-step", failed ? failed.id : "");
    if (r.ok) {
      RngOutcome.render(r.entry, r.checkpoint).forEach(function (n) { $("outcome-body").appendChild(n); });
      $("outcome").hidden = false;
    }
    result.hidden = false;
    document.body.setAttribute("data-verify-ms", String(Math.round(performance.now() - started)));
    $("result-title").focus();
  }

  async function makeLink() {
    var out = $("link-out");
    try {
      var base = location.protocol === "file:" ? location.href.split("#")[0].split("?")[0] : location.origin + location.pathname;
      var link = await RngVerify.linkFor(base, $("receipt").value.trim());
      out.textContent = "";
      var a = document.createElement("a");
      a.href = link;
      a.id = "made-link";
      a.textContent = "Link to this receipt (" + link.length + " characters)";
      out.appendChild(a);
    } catch (e) {
      out.textContent = String(e.message || e);
    }
  }

  async function fromFragment() {
    var note = $("receipt-source");
    try {
      var text = await RngVerify.receiptFromFragment(location.hash);
      if (text !== null) {
        $("receipt").value = text;
        note.textContent = "The receipt was taken from this page's link (the part after #, which browsers never send to a server). Enter the log key and press Verify.";
      }
    } catch (e) {
      note.textContent = String(e.message || e);
      note.className = "note fail";
    }
  }

  function start() {
    readFileInto($("receipt-file"), $("receipt"), function (name) {
      $("receipt-source").textContent = "Loaded the file " + name + ".";
    });
    readFileInto($("log-keys-file"), $("log-keys"));
    readFileInto($("consistency-file"), $("consistency"));
    dropInto($("receipt"));
    dropInto($("log-keys"));
    dropInto($("consistency"));
    $("form").addEventListener("submit", function (e) {
      e.preventDefault();
      verify();
    });
    $("link-button").addEventListener("click", makeLink);
    window.addEventListener("hashchange", fromFragment);
    ready = RngVerify.selectEd25519(engineChoice()).then(function (name) {
      $("engine").textContent = "Signatures are checked with " + RngVerify.engineLabel(name) + ".";
      document.body.setAttribute("data-engine", name);
    }, function (e) {
      $("engine").textContent = String(e.message || e);
      $("engine").className = "note fail";
      document.body.setAttribute("data-engine", "none");
      throw e;
    });
    Promise.allSettled([ready, fromFragment()]).then(function () {
      document.body.setAttribute("data-ready", "true");
    });
  }

  start();
})();
