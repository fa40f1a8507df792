// The explorer page (onmt/explore/page.py inlines this file). Data: the JSON of #data (onmt/explore/data.py).
// Only the current article and one page of the list are in the DOM; every text goes in through textContent.
(function () {
  "use strict";
  var D = JSON.parse(document.getElementById("data").textContent);
  var A = D.articles, S = D.systems, NAMES = ["ROUGE-1", "ROUGE-2", "ROUGE-L"];
  var POINTER = 1, SOURCE = 2, REPEATED = 4, LIST_ROWS = 10;
  var st = {order: [], cur: 0, a: 0, b: Math.min(1, S.length - 1), m: 2};
  var haystack = null;
  function $(id) { return document.getElementById(id); }
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function num(id, dflt) { var v = parseFloat($(id).value); return isNaN(v) ? dflt : v; }
  function diff(i) { var y = A[i].y; return y[st.a].f[st.m] - y[st.b].f[st.m]; }
  function signed(x) { return (x > 0 ? "+" : x < 0 ? "−" : "±") + Math.abs(x).toFixed(1); }

  function matches(i, terms) {
    if (!terms.length) return true;
    if (!haystack) {
      haystack = A.map(function (a) {
        return [a.s.join(" "), a.r.join(" ")].concat(a.y.map(function (y) { return y.w.join(" "); }))
          .join("\n").toLowerCase();
      });
    }
    return terms.every(function (t) { return haystack[i].indexOf(t) >= 0; });
  }

  var KEYS = {
    "line": function (i) { return i; },
    "diff-desc": function (i) { return -diff(i); },
    "diff-asc": function (i) { return diff(i); },
    "absdiff": function (i) { return -Math.abs(diff(i)); },
    "ov-asc": function (i) { return A[i].o; },
    "ov-desc": function (i) { return -A[i].o; },
    "len-desc": function (i) { return -A[i].s.length; },
    "len-asc": function (i) { return A[i].s.length; },
    "a-asc": function (i) { return A[i].y[st.a].f[st.m]; }
  };

  function reorder(keep) {
    var current = st.order[st.cur];
    st.a = +$("sysA").value; st.b = +$("sysB").value; st.m = +$("metric").value;
    var ovMin = num("ovMin", 0), ovMax = num("ovMax", 100), lenMin = num("lenMin", 0);
    var lenMax = num("lenMax", Infinity), win = $("winner").value;
    var terms = $("search").value.toLowerCase().split(/\s+/).filter(Boolean);
    var idx = [];
    for (var i = 0; i < A.length; i++) {
      var a = A[i], n = a.s.length, d = S.length > 1 ? diff(i) : 0;
      if (a.o < ovMin || a.o > ovMax || n < lenMin || n > lenMax) continue;
      if ((win === "a" && !(d > 0)) || (win === "b" && !(d < 0)) || (win === "tie" && d !== 0)) continue;
      if (matches(i, terms)) idx.push(i);
    }
    var key = KEYS[$("sort").value], keys = {};
    idx.forEach(function (i) { keys[i] = key(i); });
    idx.sort(function (x, y) { return keys[x] - keys[y] || x - y; });
    st.order = idx;
    st.cur = keep && idx.indexOf(current) >= 0 ? idx.indexOf(current) : 0;
    render();
  }

  function wordsNode(words, marks, cls, sys) {
    var p = el("p", cls);
    words.forEach(function (w, t) {
      var f = marks ? parseInt(marks.charAt(t), 16) : 0, s = el("span", "w", w), tip = [];
      if (sys !== undefined) {
        if (f & POINTER) { s.classList.add("cp"); tip.push("copied by the pointer"); }
        else if (f & SOURCE) { s.classList.add("src"); tip.push("in the source"); }
        if (!(f & SOURCE)) { s.classList.add("nov"); tip.push("novel: not in the source"); }
        if (f & REPEATED) { s.classList.add("rep"); tip.push("in a repeated trigram"); }
        s.tabIndex = 0; s.dataset.sys = sys;
        s.setAttribute("aria-label", w + ": " + tip.join(", "));
      } else if (marks && !(f & SOURCE)) {
        s.classList.add("nov"); tip.push("novel: not in the source");
      }
      if (tip.length) s.title = tip.join(", ");
      s.dataset.t = t;
      p.appendChild(s);
      p.appendChild(document.createTextNode(" "));
    });
    return p;
  }

  function renderList() {
    var ol = $("list"); ol.textContent = "";
    var start = Math.max(0, Math.min(st.cur - 2, st.order.length - LIST_ROWS));
    for (var k = start; k < Math.min(st.order.length, start + LIST_ROWS); k++) {
      var i = st.order[k], a = A[i], li = el("li"), b = el("button", k === st.cur ? "on" : "");
      b.type = "button"; b.dataset.k = k;
      var head = "#" + (i + 1) + (S.length > 1 ? "  Δ " + signed(diff(i)) : "") + "  overlap " +
        a.o.toFixed(0) + "%  " + a.s.length + " w  ";
      b.appendChild(el("span", "meta", head));
      b.appendChild(document.createTextNode(a.r.slice(0, 14).join(" ")));
      if (k === st.cur) b.setAttribute("aria-current", "true");
      li.appendChild(b); ol.appendChild(li);
    }
  }

  function render() {
    var view = $("view"); view.textContent = "";
    $("pos").textContent = st.order.length ? "article " + (st.cur + 1) + " of " + st.order.length +
      (st.order.length < A.length ? " (of " + A.length + ")" : "") : "no article matches";
    renderList();
    if (!st.order.length) { markReady(); return; }
    var i = st.order[st.cur], a = A[i], sec = el("section", "article");
    sec.dataset.article = i;
    var h = el("h2", "", "Article " + (i + 1) + " (line " + (i + 1) + ")");
    var facts = "overlap " + a.o.toFixed(1) + "% · " + a.s.length + " source words · reference " +
      a.r.length + " words";
    if (S.length > 1) facts = NAMES[st.m] + " " + S[st.a] + " − " + S[st.b] + ": " + signed(diff(i)) + " · " + facts;
    sec.appendChild(h); sec.appendChild(el("p", "facts", facts));
    var src = el("div", "source"); src.appendChild(el("h3", "", "Source"));
    var sp = wordsNode(a.s, null, "text"); sp.id = "src";
    Array.prototype.forEach.call(sp.querySelectorAll(".w"), function (s) { s.dataset.pos = s.dataset.t; });
    src.appendChild(sp); sec.appendChild(src);
    var cols = el("div", "columns"), ref = el("div", "col ref");
    ref.appendChild(el("h3", "", "Reference")); ref.appendChild(wordsNode(a.r, a.rm, "text"));
    cols.appendChild(ref);
    a.y.forEach(function (y, k) {
      var c = el("div", "col sys" + (k === st.a ? " is-a" : k === st.b && S.length > 1 ? " is-b" : ""));
      var hd = el("h3", "", S[k] + (k === st.a ? " (A)" : k === st.b && S.length > 1 ? " (B)" : ""));
      hd.appendChild(el("span", "score", "R-1 " + y.f[0].toFixed(1) + " · R-2 " + y.f[1].toFixed(1) +
        " · R-L " + y.f[2].toFixed(1)));
      c.appendChild(hd);
      var p = wordsNode(y.w, y.m, "text summary", k); p.dataset.sys = k;
      c.appendChild(p);
      if (!y.a) c.appendChild(el("p", "note", "no attention (a prediction file, not a dump)"));
      cols.appendChild(c);
    });
    sec.appendChild(cols);
    var status = el("p", "status", "Hover or focus a summary word to see the source words it attends to.");
    status.id = "status"; status.setAttribute("aria-live", "polite");
    sec.appendChild(status);
    view.appendChild(sec);
    markReady();
  }

  function markReady() {
    if (!document.body.dataset.ready) {
      document.body.dataset.ready = "1";
      window.exploreReadyMs = performance.now();
      // the first frame is painted before a task queued from its animation-frame callback runs
      requestAnimationFrame(function () { setTimeout(function () { window.explorePaintedMs = performance.now(); }, 0); });
    }
  }

  function clearMarks() {
    Array.prototype.forEach.call(document.querySelectorAll("#view .att, #view .intra, #view .cur"), function (s) {
      s.classList.remove("att", "att-top", "intra", "intra-top", "cur"); s.style.backgroundColor = "";
    });
  }

  function shade(spans, row, cls, rgb) {
    var top = row.length ? row[1] : 1, first = null;
    for (var j = 0; j < row.length; j += 2) {
      var s = spans[row[j]];
      if (!s) continue;
      s.classList.add(cls); if (j === 0) { s.classList.add(cls + "-top"); first = s; }
      s.style.backgroundColor = "rgba(" + rgb + "," + (0.15 + 0.75 * row[j + 1] / top).toFixed(2) + ")";
    }
    return first;
  }

  function highlight(word) {
    var k = +word.dataset.sys, t = +word.dataset.t, a = A[st.order[st.cur]], y = a.y[k];
    clearMarks(); word.classList.add("cur");
    var msg = "“" + y.w[t] + "” (word " + (t + 1) + " of " + S[k] + ")";
    if (y.p) msg += ": p(copy) " + y.p[t] + "%";
    if (y.a && y.a[t]) {
      var top = shade(document.querySelectorAll("#src .w"), y.a[t], "att", "255,165,0");
      if (top) msg += "; attends most to source word " + (+top.dataset.pos + 1) + " “" + top.textContent +
        "” (" + y.a[t][1] + "%)";
    } else if (!y.a) msg += "; no attention in this system's file";
    if (y.i && y.i[t] && y.i[t].length) {
      var own = word.parentNode.querySelectorAll(".w");
      var prev = shade(own, y.i[t], "intra", "60,170,90");
      if (prev) msg += "; among its earlier words, to “" + prev.textContent + "” (" + y.i[t][1] + "%)";
    }
    $("status").textContent = msg;
  }

  function go(k) {
    if (!st.order.length) return;
    st.cur = Math.max(0, Math.min(st.order.length - 1, k));
    render();
  }

  function init() {
    ["sysA", "sysB"].forEach(function (id, j) {
      S.forEach(function (name, k) {
        var o = el("option", "", name); o.value = k; if (k === (j ? st.b : st.a)) o.selected = true;
        $(id).appendChild(o);
      });
    });
    ["sort", "metric", "sysA", "sysB", "winner", "ovMin", "ovMax", "lenMin", "lenMax"].forEach(function (id) {
      $(id).addEventListener("change", function () { reorder(id !== "sort"); });
    });
    var timer = null;
    $("search").addEventListener("input", function () {
      clearTimeout(timer); timer = setTimeout(function () { reorder(false); }, 150);
    });
    $("prev").addEventListener("click", function () { go(st.cur - 1); });
    $("next").addEventListener("click", function () { go(st.cur + 1); });
    $("list").addEventListener("click", function (e) {
      var b = e.target.closest("button"); if (b) go(+b.dataset.k);
    });
    var view = $("view");
    view.addEventListener("mouseover", function (e) {
      if (e.target.dataset && e.target.dataset.sys !== undefined && e.target.classList.contains("w")) highlight(e.target);
    });
    view.addEventListener("focusin", function (e) {
      if (e.target.dataset && e.target.dataset.sys !== undefined && e.target.classList.contains("w")) highlight(e.target);
    });
    var chart = document.querySelector("svg.chart");
    if (chart) chart.addEventListener("click", function (e) {
      var i = e.target.getAttribute && e.target.getAttribute("data-article");
      if (i === null || i === undefined) return;
      var k = st.order.indexOf(+i);
      if (k < 0) { $("pos").textContent = "article " + (+i + 1) + " is filtered out"; return; }
      go(k); $("view").scrollIntoView();
    });
    document.addEventListener("keydown", function (e) {
      var tag = e.target.tagName;
      if (tag === "INPUT" || tag === "SELECT" || tag === "TEXTAREA") {
        if (e.key === "Escape") e.target.blur();
        return;
      }
      if (e.ctrlKey || e.metaKey || e.altKey) return;
      if (e.key === "j" || e.key === "n") go(st.cur + 1);
      else if (e.key === "k" || e.key === "p") go(st.cur - 1);
      else if (e.key === "/") { e.preventDefault(); $("search").focus(); }
      else if ((e.key === "ArrowRight" || e.key === "ArrowLeft") && e.target.classList.contains("w") &&
               e.target.dataset.sys !== undefined) {
        var sib = e.target.parentNode.querySelectorAll(".w"), t = +e.target.dataset.t;
        var next = sib[t + (e.key === "ArrowRight" ? 1 : -1)];
        if (next) { e.preventDefault(); next.focus(); }
      } else return;
    });
    reorder(false);
  }
  init();
})();
