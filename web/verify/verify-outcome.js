/*
 * Shows a verified log entry as a person reads it: the wheel number and its colour, voided 00
 * spins and the respin, Fire Numbers, the Mega Fire Blaze bonus grid as a grid, dice, dealt
 * hands, with table, round, time and log index. Exposed as the global RngOutcome.
 *
 * The records are those of docs/outcomes.md and docs/outcomes-api.md ("The RPCs and what they
 * log"); dealt hands are rebuilt from the logged shuffle with the dealing plans of
 * rng_service/outcomes/cards.py (DEAL_PLANS), as a dispute would rebuild them.
 */
(function (global) {
  "use strict";

  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) {
      if (k === "text") node.textContent = attrs[k];
      else if (k === "className") node.className = attrs[k];
      else node.setAttribute(k, attrs[k]);
    });
    (children || []).forEach(function (c) {
      if (c !== null && c !== undefined) node.appendChild(typeof c === "string" ? document.createTextNode(c) : c);
    });
    return node;
  }

  var WHEELS = {
    single_zero: "single zero wheel",
    double_zero: "double zero wheel",
    double_zero_as_single_zero: "double zero wheel used as a single zero wheel",
  };

  function pocket(spin) {
    return el("span", { className: "pocket " + spin.colour, "data-number": spin.number }, [
      el("span", { className: "pocket-number", text: spin.number }), " ",
      el("span", { className: "pocket-colour", text: spin.colour }),
    ]);
  }

  function facts(rows) {
    return el("dl", { className: "facts" }, rows.reduce(function (acc, r) {
      if (r[1] === null || r[1] === undefined || r[1] === "") return acc;
      acc.push(el("dt", { text: r[0] }));
      acc.push(el("dd", {}, [typeof r[1] === "string" || typeof r[1] === "number" ? String(r[1]) : r[1]]));
      return acc;
    }, []));
  }

  function roulette(o) {
    var parts = [el("p", { className: "big", id: "outcome-final" }, [
      "The ball came to rest on ", pocket(o.final), " (",
      WHEELS[o.wheel] || o.wheel, ", compartment " + o.final.position + ").",
    ])];
    var voided = o.spins.filter(function (s) { return s.voided; });
    if (voided.length) {
      parts.push(el("p", { id: "outcome-voids" }, [
        voided.length === 1 ? "One spin was voided before it: " : voided.length + " spins were voided before it: ",
      ]));
      var list = el("ol", { className: "spins" });
      o.spins.forEach(function (s, i) {
        list.appendChild(el("li", {}, [
          "Spin " + (i + 1) + ": ", pocket(s),
          s.voided ? " — 00 on a wheel used as a single zero wheel: no spin, voided and spun again (58 Pa. Code 617a.4(c))."
            : " — counts.",
        ]));
      });
      parts.push(list);
    }
    return parts;
  }

  function multiball(o) {
    var list = el("ol", { className: "spins", id: "outcome-balls" });
    o.balls.forEach(function (b, i) {
      list.appendChild(el("li", {}, ["Ball " + (i + 1) + ": ", pocket(b), " (compartment " + b.position + ")"]));
    });
    return [el("p", { text: o.balls.length + " balls on the " + (WHEELS[o.wheel] || o.wheel) + ", each in its own compartment:" }), list];
  }

  function fireNumbers(o) {
    return [el("p", { className: "big", id: "outcome-fire-numbers" }, [
      o.count === 1 ? "1 Fire Number: " : o.count + " Fire Numbers: ",
      el("span", { className: "numbers" }, o.numbers.reduce(function (acc, n, i) {
        if (i) acc.push(" ");
        acc.push(el("span", { className: "fire" }, [n]));
        return acc;
      }, [])),
    ]), el("p", { text: "Drawn in this order; the count comes from the game profile's weights (58 Pa. Code 617b.7(e))." })];
  }

  function bonus(o, params) {
    var table = el("table", { className: "grid", id: "outcome-grid" });
    table.appendChild(el("caption", { text: "Bonus grid: 6 segments of 6 cells; a filled cell shows its multiplier, then its value" }));
    var head = el("tr", {}, [el("th", { scope: "col", text: "Segment" })]);
    for (var p = 0; p < 6; p++) head.appendChild(el("th", { scope: "col", text: "Cell " + (p + 1) }));
    head.appendChild(el("th", { scope: "col", text: "Segment result" }));
    table.appendChild(el("thead", {}, [head]));
    var body = el("tbody");
    o.segments.forEach(function (seg) {
      var row = el("tr", {}, [el("th", { scope: "row", text: (seg.index + 1) + " (" + seg.designation + ")" })]);
      for (var c = 0; c < 6; c++) {
        var cell = o.cells[seg.index * 6 + c];
        row.appendChild(cell.multiplier === null
          ? el("td", { className: "empty", text: "empty" })
          : el("td", { className: "filled", text: "×" + cell.multiplier + (cell.value !== cell.multiplier ? " = " + cell.value : "") }));
      }
      var result = seg.complete
        ? (seg.jackpot_tier ? "complete: " + seg.jackpot_tier + " jackpot +" + seg.jackpot_value
          : "complete: cells " + seg.designation)
        : "not complete";
      row.appendChild(el("td", { text: result }));
      body.appendChild(row);
    });
    table.appendChild(body);
    var odds = o.odds || {};
    var order = ["straight_up", "split", "street", "corner", "line"];
    var keys = order.filter(function (k) { return k in odds; }).concat(
      Object.keys(odds).filter(function (k) { return order.indexOf(k) < 0; }));
    var oddsList = el("ul", { id: "outcome-odds" }, keys.map(function (k) {
      return el("li", { text: k.replace(/_/g, " ") + ": " + odds[k] + " to 1" });
    }));
    return [
      el("p", { className: "big", id: "outcome-total", text: "Total multiplier: " + o.total + " (" + o.fire_number_count + (o.fire_number_count === 1 ? " cell" : " cells") + " filled)" }),
      el("div", { className: "scroll" }, [table]),
      el("p", { text: "Payout odds of a winning qualifying bet on a Fire Number (58 Pa. Code 617b.7(g)(9)):" }),
      oddsList,
      params && params.fire_numbers_index !== undefined
        ? el("p", { text: "Fire Number draw: log entry " + params.fire_numbers_index + "; the round's spin: log entry " + params.spin_index + "." })
        : null,
    ];
  }

  var DIE = ["\u2680", "\u2681", "\u2682", "\u2683", "\u2684", "\u2685"];

  function dice(o, params) {
    var six = params && params.sides === 6;
    return [el("p", { className: "big", id: "outcome-dice" }, [
      el("span", { className: "dice" }, o.faces.map(function (f) {
        return el("span", { className: "die" }, [
          six ? el("span", { "aria-hidden": "true", text: DIE[f - 1] + " " }) : null, String(f)]);
      })),
      "  total " + o.total,
    ]), el("p", { text: o.faces.length + " dice of " + (params ? params.sides : "?") + " sides, in the order rolled." })];
  }

  // Dealing plans of rng_service/outcomes/cards.py: [kind, targets, count]
  var PLANS = {
    four_card_poker: [["round", ["players", "dealer"], 5], ["stack", ["dealer"], 1]],
    four_card_poker_six_card_bonus: [["stack", ["six_card_bonus"], 1], ["round", ["players", "dealer"], 5], ["stack", ["dealer"], 1]],
    let_it_ride_automated: [["stack", ["players"], 3], ["stack", ["community"], 2], ["stack", ["discard"], 1]],
    let_it_ride_automated_six_card_bonus: [["stack", ["players"], 3], ["stack", ["community"], 2], ["stack", ["discard"], 1], ["stack", ["six_card_bonus"], 3]],
    caribbean_stud_automated: [["stack", ["players"], 5], ["stack", ["dealer"], 5]],
  };

  function deal(cards, plan, players) {
    var steps = PLANS[plan];
    if (!steps) return null;
    var seats = [];
    for (var i = 1; i <= players; i++) seats.push("player" + i);
    var sequence = [];
    steps.forEach(function (step) {
      var targets = [];
      step[1].forEach(function (t) { targets = targets.concat(t === "players" ? seats : [t]); });
      var n, t2;
      if (step[0] === "round") {
        for (n = 0; n < step[2]; n++) sequence = sequence.concat(targets);
      } else {
        targets.forEach(function (t) { for (t2 = 0; t2 < step[2]; t2++) sequence.push(t); });
      }
    });
    var order = [], hands = {};
    sequence.forEach(function (pos, index) {
      if (!hands[pos]) { hands[pos] = []; order.push(pos); }
      hands[pos].push(index);
    });
    return order.map(function (pos) {
      return { position: pos, cards: hands[pos].map(function (i) { return cards[i]; }), shoe_indices: hands[pos] };
    });
  }

  var SUITS = { C: ["\u2663", "clubs"], D: ["\u2666", "diamonds"], H: ["\u2665", "hearts"], S: ["\u2660", "spades"] };
  var RANKS = { T: "10", J: "J", Q: "Q", K: "K", A: "A" };

  function card(label) {
    if (label.indexOf("JK") === 0) return el("span", { className: "card" }, ["Joker " + label.slice(2)]);
    var suit = SUITS[label.charAt(1)], rank = RANKS[label.charAt(0)] || label.charAt(0);
    return el("span", { className: "card " + (label.charAt(1) === "D" || label.charAt(1) === "H" ? "red" : "black"),
                        title: rank + " of " + suit[1] }, [
      rank, el("span", { "aria-hidden": "true", text: suit[0] }), el("span", { className: "sr", text: " of " + suit[1] }),
    ]);
  }

  function shuffle(o, params) {
    var parts = [];
    var hands = params && params.plan ? deal(o.cards, params.plan, params.players) : null;
    if (hands) {
      var table = el("table", { className: "hands", id: "outcome-hands" });
      table.appendChild(el("caption", { text: "Hands dealt by the plan " + params.plan + " for " + params.players + " player(s)" }));
      table.appendChild(el("thead", {}, [el("tr", {}, [
        el("th", { scope: "col", text: "Position" }), el("th", { scope: "col", text: "Cards, in the order received" }),
        el("th", { scope: "col", text: "Shoe positions" })])]));
      table.appendChild(el("tbody", {}, hands.map(function (h) {
        return el("tr", {}, [el("th", { scope: "row", text: h.position.replace(/_/g, " ") }),
          el("td", {}, h.cards.map(card)), el("td", { text: h.shoe_indices.join(", ") })]);
      })));
      parts.push(el("div", { className: "scroll" }, [table]));
    }
    parts.push(el("details", {}, [el("summary", { text: "The whole shoe, top card first (" + o.cards.length + " cards)" }),
      el("p", { className: "shoe", id: "outcome-shoe" }, o.cards.map(card))]));
    return parts;
  }

  function values(list, what, id) {
    var shown = list.slice(0, 200);
    return [el("p", { id: id, className: "values", text: what + ": " + shown.join(", ") + (list.length > shown.length ? ", … (" + list.length + " in all)" : "") })];
  }

  function describe(entry) {
    var o = entry.outcome, params = entry.params;
    switch (entry.kind) {
      case "roulette_spin": return { title: "Roulette spin", body: roulette(o) };
      case "multiball": return { title: "Multi-ball draw", body: multiball(o) };
      case "fire_numbers": return { title: "Fire Numbers", body: fireNumbers(o) };
      case "mega_fire_blaze_bonus": return { title: "Mega Fire Blaze bonus game", body: bonus(o, params) };
      case "jackpot_tier": return { title: "Jackpot tier", body: [el("p", { className: "big", id: "outcome-jackpot", text: o.tier + " jackpot, " + o.value })] };
      case "dice_roll": return { title: "Dice", body: dice(o, params) };
      case "card_shuffle": return { title: params && params.plan ? "Cards dealt" : "Card shuffle", body: shuffle(o, params) };
      case "uniform_int": return { title: "Random integers", body: values(o.values, "Values from " + params.low + " to " + params.high, "outcome-values") };
      case "weighted_choice": return { title: "Weighted choice", body: values(o.indices, "Chosen indexes", "outcome-values") };
      case "roulette_spin_batch": return { title: "Batch of roulette spins", body: values(o.numbers, "Numbers", "outcome-values") };
      case "dice_roll_batch": return { title: "Batch of dice rolls", body: values(o.faces, "Faces, roll after roll", "outcome-values") };
      case "uniform_int_batch": return { title: "Batch of integers", body: values(o.values, "Values", "outcome-values") };
      case "round_void": return { title: "Round voided", body: [el("p", { className: "big", id: "outcome-void", text: "This round was voided by " + (params.operator || "an operator") + ": " + params.reason })] };
      default: return { title: "Outcome of kind " + entry.kind, body: [el("pre", { text: JSON.stringify(o, null, 2) })] };
    }
  }

  /* The outcome section's content for a verified entry. */
  function render(entry, checkpoint) {
    var d = describe(entry);
    var nodes = [el("h3", { id: "outcome-title", text: d.title })].concat(d.body);
    if (entry.generator && entry.generator.lab_mode) {
      nodes.unshift(el("p", { className: "warning", text: "Drawn by the deterministic LAB generator: a test outcome, not a game outcome." }));
    }
    nodes.push(facts([
      ["Table", entry.table_id],
      ["Round", entry.round_id],
      ["Time (when logged)", entry.time.replace("T", " ").replace("Z", " UTC")],
      ["Log index", String(entry.index)],
      ["Log", checkpoint.origin + ", " + checkpoint.size + " entries"],
      ["Session", entry.session_id],
      ["Request id", entry.request_id],
      ["Client", entry.client],
      ["Table sequence", entry.table_seq !== undefined ? entry.table_seq + (entry.table_prev === null ? " (the table's first entry)" : " (previous entry of this table: " + entry.table_prev + ")") : ""],
      ["Table map root", entry.table_map || ""],
      ["Game profile", entry.profile_sha256 ? (params_name(entry) + " sha256 " + entry.profile_sha256) : ""],
    ]));
    return nodes;
  }

  function params_name(entry) {
    var p = entry.params && entry.params.profile;
    return p ? p.name + " v" + p.version + "," : "";
  }

  global.RngOutcome = { render: render, deal: deal };
})(this);
