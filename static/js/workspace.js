/* Concord annotator workspace: keyboard shortcuts, span highlighting, autosave, time on task.
 * Plain ES2017, no build step. The page works without it (plain form post); this makes it fast.
 * Span offsets are Unicode code points into the response's raw text (what Python's len() counts).
 */
(function () {
  "use strict";

  let ws = null; // state of the form on screen; rebuilt after every htmx swap

  // Django's JavaScript catalog (jsi18n) defines these; without it the English text stands.
  const gettext = window.gettext || ((t) => t);
  const interpolate = window.interpolate || ((fmt, args) => args.reduce((out, a) => out.replace("%s", a), fmt));

  const $ = (sel, root) => (root || document).querySelector(sel);
  const $$ = (sel, root) => Array.from((root || document).querySelectorAll(sel));

  // ------------------------------------------------------------ setup

  function init() {
    $$("[data-open]").forEach((btn) => {
      if (btn.dataset.bound) return;
      btn.dataset.bound = "1";
      btn.addEventListener("click", () => openDialog(btn.dataset.open));
    });
    const form = document.getElementById("ws-form");
    if (!form) { ws = null; return; }
    if (ws && ws.form === form) return;
    ws = {
      form,
      autosave: form.dataset.autosave === "1",
      draftUrl: form.dataset.draftUrl,
      baseTime: parseInt(form.dataset.time || "0", 10) || 0,
      visibleSince: document.visibilityState === "visible" ? performance.now() : null,
      counted: 0,
      dirty: false, saving: false, again: false, timer: null, problem: null,
      current: 1, crit: null, digits: "", digitTimer: null,
      spans: [],
    };
    $$("[data-spans-input]", form).forEach(setupSpans);
    $$("[data-rank-list]", form).forEach(setupRanking);
    $$("[data-slider]", form).forEach(setupSlider);
    form.addEventListener("change", onEdit);
    form.addEventListener("input", onEdit);
    form.addEventListener("focusin", (e) => {
      const fs = e.target.closest(".criterion");
      if (fs) setCurrentCriterion(fs, false);
      if (e.target.matches("input, textarea, select, [role=slider]")) keepVisible(e.target.matches("textarea") ? e.target : fs || e.target);
      const resp = e.target.closest("[data-response]");
      if (resp) setCurrentResponse(parseInt(resp.dataset.response, 10), false);
    });
    form.addEventListener("click", (e) => {
      const go = e.target.closest("[data-goto]");
      if (go) { e.preventDefault(); goTo(parseInt(go.dataset.goto, 10), true); }
      const resp = e.target.closest("[data-response]");
      if (resp && !go) setCurrentResponse(parseInt(resp.dataset.response, 10), false);
    });
    form.addEventListener("change", (e) => {
      if (e.target.matches(".sr-radio")) showAnchor(e.target.closest(".criterion"), null);
      const fs = e.target.closest(".criterion[data-widget=pairwise]");
      if (fs && e.target.name === fs.dataset.name) syncStrength(fs);
    });
    form.addEventListener("mouseover", (e) => {
      const seg = e.target.closest(".seg[data-value]");
      if (seg) showAnchor(seg.closest(".criterion"), seg.dataset.value);
    });
    form.addEventListener("mouseout", (e) => {
      const seg = e.target.closest(".seg[data-value]");
      if (seg && !seg.contains(e.relatedTarget)) showAnchor(seg.closest(".criterion"), null);
    });
    setupContextToggle(form);
    const ignore = $("[data-ignore]", form);
    if (ignore) ignore.addEventListener("change", syncIgnore);
    syncIgnore();
    setCurrentResponse(1, false);
    refreshStates();
    const summary = $(".error-summary", form);
    if (summary) {
      // Errors came back from the server: open the response of the first one, announce the list.
      const first = $(".criterion.has-error", form);
      const resp = first && first.closest("[data-response]");
      if (resp) setCurrentResponse(parseInt(resp.dataset.response, 10), false);
      summary.addEventListener("click", (e) => {
        const link = e.target.closest("a[href^='#f-']");
        const target = link && document.getElementById(link.getAttribute("href").slice(1));
        if (!target) return;
        e.preventDefault();
        const r = target.closest("[data-response]");
        if (r) setCurrentResponse(parseInt(r.dataset.response, 10), true);
        const fs = target.closest(".criterion");
        if (fs) setCurrentCriterion(fs, true); else target.scrollIntoView({ block: "center" });
      });
      summary.focus();
    }
    form.dataset.ready = "1";  // keys are handled from here on (browser tests wait for it)
  }

  function openDialog(id) {
    const d = document.getElementById(id);
    if (d && !d.open) d.showModal();
  }

  function anyDialogOpen() { return $$("dialog[open]").length > 0; }

  // ------------------------------------------------------------ anchors, context, visibility

  // Show the anchor text of `value` (hovered) or, when null, of the chosen level under a scale.
  function showAnchor(fs, value) {
    const box = fs && $("[data-anchors]", fs);
    if (!box) return;
    const checked = $("input[type=radio]:checked", fs);
    const want = value !== null ? value : (checked ? checked.value : "");
    const hasIt = $$("[data-anchor]", box).some((p) => p.dataset.anchor === want);
    $$("[data-anchor]", box).forEach((p) => { p.hidden = p.dataset.anchor !== (hasIt ? want : ""); });
  }

  function setupContextToggle(form) {
    const btn = $("[data-ctx-toggle]", form);
    const body = $("#context-body", form);
    if (!btn || !body) return;
    // Only offered when the context is actually cut off by its height cap.
    btn.hidden = body.scrollHeight <= body.clientHeight + 2;
    btn.addEventListener("click", toggleContext);
  }

  function toggleContext() {
    const btn = $("[data-ctx-toggle]", ws.form);
    if (!btn || btn.hidden) return false;
    const section = btn.closest(".ws-context");
    const open = section.classList.toggle("expanded");
    btn.setAttribute("aria-expanded", open ? "true" : "false");
    btn.firstChild.textContent = (open ? gettext("Show less") : gettext("Show all")) + " ";
    return true;
  }

  // The submit bar is sticky at the bottom: scroll so that `el` ends above it (and below the top).
  function keepVisible(el) {
    if (!el) return;
    const bar = $(".ws-actions", ws && ws.form);
    const limit = bar ? bar.getBoundingClientRect().top - 8 : window.innerHeight - 8;
    const r = el.getBoundingClientRect();
    if (r.bottom > limit && r.height < limit - 16) window.scrollBy(0, r.bottom - limit);
    else if (r.top < 8 || r.bottom > limit) window.scrollBy(0, r.top - 16);
  }

  // ------------------------------------------------------------ time on task

  function timeOnTask() {
    const live = ws.visibleSince !== null ? performance.now() - ws.visibleSince : 0;
    return Math.round(ws.baseTime + ws.counted + live);
  }

  document.addEventListener("visibilitychange", () => {
    if (!ws) return;
    if (document.visibilityState === "visible") {
      ws.visibleSince = performance.now();
    } else {
      if (ws.visibleSince !== null) ws.counted += performance.now() - ws.visibleSince;
      ws.visibleSince = null;
      flushDraft(true);
    }
  });

  // ------------------------------------------------------------ autosave

  function onEdit(e) {
    if (e && e.target && e.target.matches && e.target.matches("input[type=radio]")) {
      const fs = e.target.closest(".criterion");
      if (fs) fs.classList.remove("has-error");
    }
    refreshStates();
    ws.problem = null;  // an edit may have answered it; the next submit checks again
    if (!ws.autosave) return;
    ws.dirty = true;
    clearTimeout(ws.timer);
    ws.timer = setTimeout(() => saveDraft(), e && e.type === "input" ? 900 : 250);
    status(gettext("Unsaved changes…"));
  }

  function formData() {
    ws.form.querySelector("input[name=time_on_task_ms]").value = String(timeOnTask());
    return new FormData(ws.form);
  }

  function csrf() {
    const input = ws.form.querySelector("input[name=csrfmiddlewaretoken]");
    return input ? input.value : "";
  }

  async function saveDraft() {
    if (!ws || !ws.autosave) return;
    if (ws.saving) { ws.again = true; return; }
    ws.saving = true; ws.dirty = false;
    const mine = ws;
    try {
      const resp = await fetch(mine.draftUrl, {
        method: "POST", body: formData(), credentials: "same-origin",
        headers: { "X-CSRFToken": csrf(), "X-Requested-With": "fetch" },
      });
      if (!resp.ok) throw new Error(await resp.text());
      // A refused submit's problem stays on the line until the rater edits: an autosave finishing after it
      // must not replace what is missing with "Draft saved".
      if (ws === mine && !mine.problem) status(gettext("Draft saved") + " " + new Date().toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", second: "2-digit" }), false, true);
    } catch (err) {
      mine.dirty = true;
      if (ws === mine) status(interpolate(gettext("Not saved yet (%s); retrying…"), [(err.message || gettext("offline")).slice(0, 80)]), true);
      clearTimeout(mine.timer);
      mine.timer = setTimeout(saveDraft, 3000);
    } finally {
      mine.saving = false;
      if (mine.again && ws === mine) { mine.again = false; saveDraft(); }
    }
  }

  function flushDraft(beacon) {
    if (!ws || !ws.autosave || !ws.dirty) return;
    clearTimeout(ws.timer);
    if (beacon && navigator.sendBeacon) {
      // The form carries its CSRF token, so the beacon passes Django's check without a header.
      if (navigator.sendBeacon(ws.draftUrl, formData())) { ws.dirty = false; return; }
    }
    saveDraft();
  }

  window.addEventListener("pagehide", () => flushDraft(true));

  function status(text, bad, saved) {
    const el = $("#save-status");
    if (!el) return;
    el.textContent = text;
    el.classList.toggle("bad", !!bad);
    el.dataset.saved = saved ? "1" : "0";
  }

  // ------------------------------------------------------------ responses and criteria

  function responses() { return $$("[data-response]", ws.form); }

  function setCurrentResponse(n, scroll) {
    const all = responses();
    if (!all.length) return;
    n = Math.max(1, Math.min(all.length, n));
    ws.current = n;
    const succession = ws.form.classList.contains("succ");
    all.forEach((el) => {
      const on = parseInt(el.dataset.response, 10) === n;
      el.classList.toggle("is-current", on && !succession && all.length > 1);
      if (succession) el.hidden = !on;
    });
    $$("[role=tab]", ws.form).forEach((tab) => {
      const on = parseInt(tab.dataset.goto, 10) === n;
      tab.setAttribute("aria-selected", on ? "true" : "false");
      tab.tabIndex = on ? 0 : -1;
    });
    const cur = ws.crit && ws.crit.closest("[data-response]");
    if (!cur || parseInt(cur.dataset.response, 10) !== n) {
      setCurrentCriterion(firstOpen(responseEl(n)) || criteriaOf(responseEl(n))[0] || null, false);
    }
    if (scroll) {
      const el = responseEl(n);
      const still = window.matchMedia("(prefers-reduced-motion: reduce)").matches;
      if (el && !succession) el.scrollIntoView({ block: "nearest", behavior: still ? "auto" : "smooth" });
    }
  }

  function goTo(n, focus) {
    setCurrentResponse(n, true);
    if (focus && ws.crit) focusCriterion(ws.crit);
  }

  function responseEl(n) { return $('[data-response="' + n + '"]', ws.form); }
  function criteriaOf(el) { return el ? $$(".criterion", el) : []; }
  function itemCriteria() { return $$(".item-controls .criterion", ws.form); }

  function setCurrentCriterion(fs, focus) {
    if (ws.crit) ws.crit.classList.remove("is-current");
    ws.crit = fs;
    if (fs) {
      fs.classList.add("is-current");
      if (focus) focusCriterion(fs);
    }
  }

  function focusCriterion(fs) {
    // A ranking takes the focus on its first row (digits rank, Alt+arrows move), not in a rank box.
    const target = fs.dataset.widget === "ranking" ? $(".rank-row", fs)
      : $("input:checked", fs) || $("input:not([type=hidden]), textarea, select", fs);
    if (target) target.focus({ preventScroll: true });
    keepVisible(fs);
  }

  function answered(fs) {
    switch (fs.dataset.widget) {
      case "segmented": case "choice": case "binary":
        return !!$("input[type=radio]:checked", fs);
      case "slider":
        return !!$("[data-slider-input]", fs).value;
      case "spans": {
        try { return JSON.parse($("[data-spans-input]", fs).value || "[]").length > 0; } catch (e) { return false; }
      }
      case "pairwise": {
        const w = $$("input[type=radio]", fs).find((r) => r.name === fs.dataset.name && r.checked);
        const group = $("[data-strength]", fs);
        return !!w && (!group || w.value === "tie" || !!$("input:checked", group));
      }
      case "ranking":
        return $$("select.rank-select", fs).every((sel) => sel.value);
      case "best_worst":
        return !!$("input[name$='__best']:checked", fs) && !!$("input[name$='__worst']:checked", fs);
      default: {
        const el = $("input:not([type=hidden]):not(.reasoning), textarea:not(.reasoning)", fs);
        return !!(el && el.value.trim());
      }
    }
  }

  function missing(fs) {
    // What a required criterion still lacks: "" when complete.
    if (fs.dataset.required === "1" && !answered(fs)) return "missing";
    if (fs.dataset.reasoning === "required" && answered(fs)) {
      const r = $("textarea.reasoning", fs);
      if (r && !r.value.trim()) return "reasoning";
    }
    return "";
  }

  function firstOpen(el) { return criteriaOf(el).find((fs) => missing(fs)) || null; }

  function isIgnored() {
    const box = $("[data-ignore]", ws.form);
    return !!(box && box.checked);
  }

  function syncIgnore() {
    const ignored = isIgnored();
    ws.form.classList.toggle("is-ignored", ignored);
    const reason = $(".ignore-reason", ws.form);
    if (reason) reason.hidden = !ignored;
  }

  function refreshStates() {
    responses().forEach((el) => {
      const n = el.dataset.response;
      const done = !firstOpen(el);
      const dot = $('[role=tab][data-goto="' + n + '"] .tab-state', ws.form);
      if (dot) dot.classList.toggle("done", done);
    });
  }

  function nextCriterion(delta) {
    const list = criteriaOf(responseEl(ws.current)).concat(itemCriteria());
    if (!list.length) return;
    let i = list.indexOf(ws.crit);
    i = i < 0 ? 0 : Math.max(0, Math.min(list.length - 1, i + delta));
    setCurrentCriterion(list[i], true);
  }

  // Keyboard path after a level is chosen: stay for the reasoning box when the criterion asks for one
  // (Tab reaches it), otherwise on to the next open criterion, then to the item's own criteria.
  function advanceAfterAnswer(fs, byKey) {
    const reasoning = $("textarea.reasoning", fs);
    if (reasoning && !reasoning.value.trim()) {
      if (byKey) { const r = $("input:checked", fs); if (r) r.focus({ preventScroll: true }); keepVisible(fs); }
      status(fs.dataset.reasoning === "required" ? gettext("Tab to write your reasoning") : gettext("Tab for reasoning (optional), or ↓ for the next criterion"));
      return;
    }
    moveOn(fs, byKey);
  }

  function moveOn(fs, focus) {
    const el = fs.closest("[data-response]");
    let next = el ? firstOpen(el) : null;
    if (!next && !responses().some((r) => firstOpen(r))) next = itemCriteria().find((f) => missing(f)) || null;
    if (next && next !== fs) setCurrentCriterion(next, focus);
  }

  // ------------------------------------------------------------ choosing values by key

  function choose(fs, value, byKey) {
    const radio = $$("input[type=radio]", fs).find((r) => r.value === value);
    if (!radio) return false;
    radio.checked = true;
    radio.dispatchEvent(new Event("change", { bubbles: true }));
    fs.classList.remove("has-error");
    advanceAfterAnswer(fs, byKey !== false);
    return true;
  }

  function digitTarget() {
    const usable = (fs) => fs && ["segmented", "slider", "choice", "number", "pairwise", "ranking", "best_worst"].includes(fs.dataset.widget);
    if (usable(ws.crit)) return ws.crit;
    return criteriaOf(responseEl(ws.current)).concat(itemCriteria()).find((fs) => usable(fs) && !answered(fs)) || null;
  }

  function onDigit(d) {
    const fs = digitTarget();
    if (!fs) return false;
    if (fs.dataset.widget === "number") {
      const input = $("input[type=number]", fs);
      input.focus();
      return false; // let the key type into the box
    }
    if (fs.dataset.widget === "slider") {
      const thumb = $("[data-slider-thumb]", fs);
      thumb.focus();
      return sliderDigit($("[data-slider]", fs), d);
    }
    if (fs.dataset.widget === "pairwise") return pickPair(fs, d);
    if (fs.dataset.widget === "best_worst") return bestWorstDigit(fs, d);
    if (fs.dataset.widget === "ranking") return rankDigit(fs, d);
    if (fs.dataset.widget === "choice") {
      const options = $$("input[type=radio]", fs);
      const i = parseInt(d, 10) - 1;
      if (i >= 0 && i < options.length) choose(fs, options[i].value);
      return true;
    }
    // A scale: "1" then "0" within half a second means 10 when the scale reaches 10.
    const values = $$("input[type=radio]", fs).map((r) => r.value);
    clearTimeout(ws.digitTimer);
    const combined = ws.digits + d;
    if (ws.digits && values.includes(combined)) {
      ws.digits = "";
      choose(fs, combined);
      return true;
    }
    ws.digits = "";
    if (values.includes(d + "0") && values.includes(d)) {
      ws.digits = d;
      const target = fs;
      ws.digitTimer = setTimeout(() => { ws.digits = ""; choose(target, d); }, 450);
      return true;
    }
    if (values.includes(d)) choose(fs, d);
    return true;
  }

  function onAcceptReject(key) {
    const el = responseEl(ws.current);
    // The current criterion when it is a yes/no one (per-step questions of a trajectory are several), else the first.
    const current = ws.crit && ws.crit.dataset.widget === "binary" && el && el.contains(ws.crit) ? ws.crit : null;
    const fs = current || criteriaOf(el).find((f) => f.dataset.widget === "binary");
    if (!fs) return false;
    const label = $$("label[data-key]", fs).find((l) => l.dataset.key === key);
    if (!label) return false;
    const radio = document.getElementById(label.getAttribute("for"));
    return choose(fs, radio.value);
  }

  // ------------------------------------------------------------ comparative questions

  function fire(input) { input.dispatchEvent(new Event("change", { bubbles: true })); }

  // Pairwise: 1 / 2 (/ 3 tie) by key, then S(lightly) or C(learly) when the question asks how much.
  function pickPair(fs, key) {
    const label = $$("label[data-key]", fs).find((l) => l.dataset.key === key);
    if (!label) return true;
    const radio = document.getElementById(label.htmlFor);
    radio.checked = true;
    fire(radio);
    fs.classList.remove("has-error");
    setCurrentCriterion(fs, false);
    const group = $("[data-strength]", fs);
    if (group && radio.value !== "tie" && !$("input:checked", group)) {
      radio.focus({ preventScroll: true });
      status(gettext("S: slightly better · C: clearly better"));
      return true;
    }
    advanceAfterAnswer(fs, true);
    return true;
  }

  // A tie has no strength: the strength buttons clear and step aside while a tie is chosen.
  function syncStrength(fs) {
    const group = $("[data-strength]", fs);
    const w = $$("input[type=radio]", fs).find((r) => r.name === fs.dataset.name && r.checked);
    if (!group) return;
    const tie = !!w && w.value === "tie";
    if (tie) $$("input", group).forEach((r) => { r.checked = false; });
    group.hidden = tie;
  }

  function pickStrength(key) {
    const fs = ws.crit && ws.crit.dataset.widget === "pairwise" ? ws.crit
      : itemCriteria().find((f) => f.dataset.widget === "pairwise");
    const label = fs && $$("label[data-strength-key]", fs).find((l) => l.dataset.strengthKey === key);
    if (!label) return false;
    const radio = document.getElementById(label.htmlFor);
    radio.checked = true;
    fire(radio);
    advanceAfterAnswer(fs, true);
    return true;
  }

  // Best-worst: the number of the best response, then of the worst; a third number starts again.
  function bestWorstDigit(fs, d) {
    const best = $$("input[name$='__best']", fs), worst = $$("input[name$='__worst']", fs);
    const b = best.find((r) => r.value === d);
    if (!b) return true;
    setCurrentCriterion(fs, false);
    const chosen = best.find((r) => r.checked);
    if (!chosen || worst.some((r) => r.checked)) {
      worst.forEach((r) => { r.checked = false; });
      b.checked = true;
      fire(b);
      status(interpolate(gettext("Best: Response %s. Now the number of the worst"), [d]));
      return true;
    }
    if (chosen.value === d) { status(gettext("The worst must be another response")); return true; }
    const w = worst.find((r) => r.value === d);
    w.checked = true;
    fire(w);
    fs.classList.remove("has-error");
    advanceAfterAnswer(fs, true);
    return true;
  }

  // Ranking: numbers typed best first give ranks 1, 2, ...; the last one left takes the last rank.
  function rankDigit(fs, d) {
    const list = $("[data-rank-list]", fs);
    const rows = $$(".rank-row", list);
    const row = rows.find((r) => r.dataset.n === d);
    if (!row) return true;
    setCurrentCriterion(fs, false);
    const sel = (r) => $("select", r);
    if (rows.every((r) => sel(r).value)) rows.forEach((r) => { sel(r).value = ""; });
    if (sel(row).value) return true;
    sel(row).value = String(rows.filter((r) => sel(r).value).length + 1);
    const open = rows.filter((r) => !sel(r).value);
    if (open.length === 1) sel(open[0]).value = String(rows.length);
    sortByRanks(list);
    fire(sel(row));
    if (open.length <= 1) { fs.classList.remove("has-error"); advanceAfterAnswer(fs, true); }
    else status(interpolate(gettext("Ranked %s of %s: the next number"), [rows.length - open.length, rows.length]));
    return true;
  }

  function sortByRanks(list) {
    const rank = (r) => parseInt($("select", r).value, 10) || 1e9;
    $$(".rank-row", list).sort((a, b) => rank(a) - rank(b)).forEach((r) => list.appendChild(r));
  }

  // After a drag or a move, the order on screen is the ranking.
  function renumber(list) {
    const rows = $$(".rank-row", list);
    rows.forEach((r, i) => { $("select", r).value = String(i + 1); });
    if (rows.length) fire($("select", rows[0]));
  }

  function moveRow(row, delta) {
    const list = row.parentNode;
    const other = delta < 0 ? row.previousElementSibling : row.nextElementSibling;
    if (other) list.insertBefore(row, delta < 0 ? other : other.nextSibling);
    renumber(list);
    row.focus({ preventScroll: true });
    keepVisible(row);
  }

  function setupRanking(list) {
    let dragged = null;
    list.addEventListener("dragstart", (e) => {
      dragged = e.target.closest(".rank-row");
      if (!dragged) return;
      e.dataTransfer.effectAllowed = "move";
      e.dataTransfer.setData("text/plain", dragged.dataset.n);
      dragged.classList.add("dragging");
    });
    list.addEventListener("dragover", (e) => {
      const over = e.target.closest(".rank-row");
      if (!dragged) return;
      e.preventDefault();
      if (!over || over === dragged) return;
      const box = over.getBoundingClientRect();
      list.insertBefore(dragged, e.clientY > box.top + box.height / 2 ? over.nextSibling : over);
    });
    list.addEventListener("drop", (e) => e.preventDefault());
    list.addEventListener("dragend", () => {
      if (!dragged) return;
      dragged.classList.remove("dragging");
      dragged = null;
      renumber(list);
    });
    list.addEventListener("click", (e) => {
      const button = e.target.closest("[data-move]");
      if (button) moveRow(button.closest(".rank-row"), parseInt(button.dataset.move, 10));
    });
    list.addEventListener("keydown", (e) => {
      const row = e.target.closest(".rank-row");
      if (!row || !e.altKey || (e.key !== "ArrowUp" && e.key !== "ArrowDown")) return;
      e.preventDefault();
      e.stopPropagation();
      moveRow(row, e.key === "ArrowUp" ? -1 : 1);
    });
    list.addEventListener("change", (e) => { if (e.target.matches(".rank-select")) sortByRanks(list); });
  }

  // ------------------------------------------------------------ submit

  function firstProblem() {
    if (isIgnored()) {
      const reason = $("#ignore-reason", ws.form);
      return reason && !reason.value.trim() ? { fs: $(".ignore", ws.form), text: gettext("Say why this example should be ignored"), n: null } : null;
    }
    for (const el of responses()) {
      const fs = firstOpen(el);
      if (fs) {
        const n = parseInt(el.dataset.response, 10);
        const what = missing(fs) === "reasoning" ? gettext("%s: write your reasoning") : gettext("%s is required");
        return { fs, n, text: interpolate(gettext("Response %s: "), [n]) + interpolate(what, [$(".c-name", fs).textContent]) };
      }
    }
    const fs = itemCriteria().find((f) => missing(f));
    return fs ? { fs, n: null, text: interpolate(gettext("%s is required"), [$(".c-name", fs).textContent]) } : null;
  }

  function showProblem(p) {
    if (p.n) setCurrentResponse(p.n, true);
    p.fs.classList.add("has-error");
    if (p.fs.classList.contains("criterion")) setCurrentCriterion(p.fs, true);
    else { const input = $("select, input", p.fs); if (input) input.focus(); }
    ws.problem = p.text;
    status(p.text, true);
  }

  // Capture phase on the document: runs before htmx's own submit listener on the form.
  document.addEventListener("submit", (e) => {
    if (!ws || e.target !== ws.form) return;
    const p = firstProblem();
    if (p) {
      e.preventDefault();
      e.stopImmediatePropagation();
      e.stopPropagation();
      showProblem(p);
      return;
    }
    clearTimeout(ws.timer);
    ws.dirty = false;
    ws.problem = null;
    ws.form.querySelector("input[name=time_on_task_ms]").value = String(timeOnTask());
    status(gettext("Submitting…"));
  }, true);

  function onEnter() {
    const p = firstProblem();
    if (!p) { ws.form.requestSubmit(); return; }
    if (p.n === ws.current || p.n === null) { showProblem(p); return; }
    // The current response is complete: move on to the next one that needs answers.
    goTo(p.n, true);
  }

  // ------------------------------------------------------------ sliders
  // A scale shown as a slider has no value until the rater places it: no thumb, aria-valuetext "not set".
  // Pointer (mouse, pen, touch) on the track places and drags it; keys: arrows and Page Up/Down step
  // (the first arrow places it at the near end), Home/End, digits typed (1 then 0 within a moment is 10).

  function sliderBounds(sl) {
    return { min: parseFloat(sl.dataset.min), max: parseFloat(sl.dataset.max), step: parseFloat(sl.dataset.step) || 1 };
  }

  function sliderValue(sl) {
    const v = $("[data-slider-input]", sl).value;
    return v === "" ? null : parseFloat(v);
  }

  function setSlider(sl, value) {
    const b = sliderBounds(sl);
    const snapped = Math.min(b.max, Math.max(b.min, b.min + Math.round((value - b.min) / b.step) * b.step));
    const text = String(parseFloat(snapped.toFixed(6)));
    const input = $("[data-slider-input]", sl), thumb = $("[data-slider-thumb]", sl);
    const changed = input.value !== text;
    input.value = text;
    const pct = b.max > b.min ? (100 * (snapped - b.min)) / (b.max - b.min) : 0;
    sl.style.setProperty("--value", pct + "%");
    sl.classList.remove("unset");
    const texts = JSON.parse(sl.dataset.texts || "{}");
    const spoken = texts[text] || text;
    thumb.setAttribute("aria-valuenow", text);
    thumb.setAttribute("aria-valuetext", spoken);
    $("[data-slider-readout]", sl).textContent = spoken;
    $$("[data-anchor-value]", sl.closest(".criterion")).forEach((li) => li.classList.toggle("current", li.dataset.anchorValue === text));
    if (changed) input.dispatchEvent(new Event("change", { bubbles: true }));
    const fs = sl.closest(".criterion");
    if (fs) fs.classList.remove("has-error");
  }

  function sliderDigit(sl, d) {
    const b = sliderBounds(sl);
    clearTimeout(sl._digitTimer);
    let typed = (sl._digits || "") + d;
    if (parseFloat(typed) > b.max) typed = d;
    sl._digits = typed;
    sl._digitTimer = setTimeout(() => { sl._digits = ""; }, 800);
    const v = parseFloat(typed);
    if (v >= b.min && v <= b.max) setSlider(sl, v);
    return true;
  }

  function setupSlider(sl) {
    const track = $("[data-slider-track]", sl), thumb = $("[data-slider-thumb]", sl);
    const initial = sliderValue(sl);
    if (initial !== null) setSlider(sl, initial);
    const fromPointer = (e) => {
      const r = track.getBoundingClientRect(), b = sliderBounds(sl);
      const share = Math.min(1, Math.max(0, (e.clientX - r.left) / r.width));
      setSlider(sl, b.min + share * (b.max - b.min));
    };
    track.addEventListener("pointerdown", (e) => {
      if (e.button !== 0) return;
      e.preventDefault();
      thumb.focus({ preventScroll: true });
      track.setPointerCapture(e.pointerId);
      fromPointer(e);
    });
    track.addEventListener("pointermove", (e) => { if (track.hasPointerCapture(e.pointerId)) fromPointer(e); });
    thumb.addEventListener("keydown", (e) => {
      if (e.ctrlKey || e.metaKey || e.altKey) return;
      const b = sliderBounds(sl), v = sliderValue(sl), big = Math.max(b.step, (b.max - b.min) / 10);
      let next = null;
      if (e.key === "ArrowRight" || e.key === "ArrowUp") next = v === null ? b.min : v + b.step;
      else if (e.key === "ArrowLeft" || e.key === "ArrowDown") next = v === null ? b.max : v - b.step;
      else if (e.key === "PageUp") next = v === null ? b.min : v + big;
      else if (e.key === "PageDown") next = v === null ? b.max : v - big;
      else if (e.key === "Home") next = b.min;
      else if (e.key === "End") next = b.max;
      else if (/^[0-9]$/.test(e.key)) { sliderDigit(sl, e.key); e.preventDefault(); e.stopPropagation(); return; }
      if (next === null) return;
      e.preventDefault();
      e.stopPropagation();  // the page's own arrow keys move between responses and criteria
      setSlider(sl, next);
    });
  }

  // ------------------------------------------------------------ keyboard

  function typing(el) {
    if (!el) return false;
    if (el.isContentEditable) return true;
    if (el.tagName === "TEXTAREA" || el.tagName === "SELECT") return true;
    return el.tagName === "INPUT" && !["radio", "checkbox", "button", "submit"].includes(el.type);
  }

  document.addEventListener("keydown", (e) => {
    if (e.isComposing) return;
    if (ws && e.key === "Enter" && (e.ctrlKey || e.metaKey) && !anyDialogOpen()) { e.preventDefault(); onEnter(); return; }
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    if (e.key === "Escape" && typing(e.target)) {
      // Leave the box; from a reasoning box go on to the next open criterion.
      const fs = ws && e.target.classList.contains("reasoning") ? e.target.closest(".criterion") : null;
      e.target.blur();
      if (fs) { setCurrentCriterion(fs, false); moveOn(fs, true); }
      return;
    }
    if (typing(e.target) || anyDialogOpen()) return;
    if (e.key === "?") { e.preventDefault(); openDialog("help-dialog"); return; }
    if (e.key === "g" || e.key === "G") {
      const btn = $('[data-open="guidelines-dialog"]');
      if (btn) { e.preventDefault(); btn.click(); }
      return;
    }
    if (!ws) return;
    const k = e.key;
    let handled = false;
    if (/^[0-9]$/.test(k)) handled = onDigit(k);
    else if (k === "a" || k === "A") handled = onAcceptReject("A");
    else if (k === "r" || k === "R") handled = onAcceptReject("R");
    else if (k === "s" || k === "S") handled = pickStrength("S");
    else if (k === "c" || k === "C") handled = pickStrength("C");
    else if (k === "h" || k === "H") handled = highlightSelection();
    else if (k === "e" || k === "E") handled = toggleContext();
    else if (k === "ArrowRight") { goTo(ws.current + 1, false); handled = true; }
    else if (k === "ArrowLeft") { goTo(ws.current - 1, false); handled = true; }
    else if (k === "ArrowDown") { nextCriterion(1); handled = true; }
    else if (k === "ArrowUp") { nextCriterion(-1); handled = true; }
    else if (k === "Enter") {
      const el = e.target;
      if (el && (el.tagName === "BUTTON" || el.tagName === "A" || el.tagName === "SUMMARY")) return;
      onEnter(); handled = true;
    }
    if (handled) e.preventDefault();
  });

  // ------------------------------------------------------------ highlighting

  const cpLen = (s) => Array.from(s).length;           // code points
  function cpToUnits(text, cp) { return Array.from(text).slice(0, cp).join("").length; }

  function setupSpans(input) {
    const fs = input.closest(".criterion");
    const name = fs.dataset.name;
    const target = name.startsWith("item__") ? "item" : name.slice(1, name.indexOf("__"));
    const body = $('[data-response-body="' + target + '"]', ws.form);
    // A per-step question of a trajectory highlights in its own step's text (data-step on both).
    const within = fs.dataset.step ? body && $('li.step[data-step="' + fs.dataset.step + '"]', body) : body;
    const root = within && $("[data-span-root]", within);
    if (!root) return;
    let spans = [];
    try { spans = JSON.parse(input.value || "[]"); } catch (e) { spans = []; }
    const labels = (input.dataset.labels || "").split("|").filter(Boolean);
    const s = { input, fs, root, original: root.innerHTML, raw: root.textContent, labels, spans, cursor: -1, anchor: -1 };
    ws.spans.push(s);
    root.addEventListener("mouseup", () => setTimeout(() => addFromSelection(s), 0));
    setupKeyboardSelection(s);
    renderSpans(s);
  }

  // Highlighting without a mouse: the text is a read-only text box in the tab order; ←/→ step word by
  // word (the word is selected), Shift+←/→ extend the selection, Enter or H highlights it, Esc leaves.
  // The selection is the page's real one, so the mouse path (addFromSelection) stores it.
  function setupKeyboardSelection(s) {
    const root = s.root, help = $(".span-help", s.fs);
    root.tabIndex = 0;
    root.setAttribute("role", "textbox");
    root.setAttribute("aria-readonly", "true");
    root.setAttribute("aria-multiline", "true");
    if (!root.hasAttribute("aria-label")) root.setAttribute("aria-label", $(".c-name", s.fs).textContent);
    if (help) { help.id = help.id || s.fs.id + "-help"; root.setAttribute("aria-describedby", help.id); }
    root.addEventListener("keydown", (e) => {
      if (e.ctrlKey || e.metaKey || e.altKey) return;
      const words = wordsOf(s.raw);
      if (!words.length) return;
      if (e.key === "ArrowRight" || e.key === "ArrowLeft") {
        const step = e.key === "ArrowRight" ? 1 : -1;
        const rtl = getComputedStyle(root).direction === "rtl";
        const move = rtl ? -step : step;
        s.cursor = s.cursor < 0 ? (move > 0 ? 0 : words.length - 1) : Math.max(0, Math.min(words.length - 1, s.cursor + move));
        if (!e.shiftKey || s.anchor < 0) s.anchor = s.cursor;
        selectWords(s, words);
      } else if (e.key === "Enter" || e.key === "h" || e.key === "H") {
        // Without a selection begun by keyboard, Enter keeps its workspace meaning (next response / submit).
        if (addFromSelection(s)) { s.anchor = s.cursor; status(interpolate(gettext("Highlighted (%s in all)"), [s.spans.length])); }
        else if (s.cursor >= 0) status(gettext("Choose words first: ← → move, Shift+← → extend"));
        else return;
      } else if (e.key === "Escape") {
        window.getSelection().removeAllRanges();
        s.cursor = s.anchor = -1;
        root.blur();
      } else return;
      e.preventDefault();
      e.stopPropagation();
    });
  }

  function wordsOf(text) {
    const out = [];
    const re = /\S+/g;
    for (let m = re.exec(text); m; m = re.exec(text)) out.push([m.index, m.index + m[0].length]);
    return out;
  }

  function selectWords(s, words) {
    const a = words[Math.min(s.anchor, s.cursor)][0], b = words[Math.max(s.anchor, s.cursor)][1];
    const range = document.createRange();
    const [startNode, startOff] = pointAt(s.root, a), [endNode, endOff] = pointAt(s.root, b);
    range.setStart(startNode, startOff);
    range.setEnd(endNode, endOff);
    const sel = window.getSelection();
    sel.removeAllRanges();
    sel.addRange(range);
    const text = s.raw.slice(a, b);
    status(interpolate(gettext("Selected: “%s” (Enter highlights)"), [text.length > 60 ? text.slice(0, 60) + "…" : text]));
  }

  // The text node and offset at UTF-16 offset `pos` of root's text.
  function pointAt(root, pos) {
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    let last = null, seen = 0;
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      if (pos <= seen + node.data.length) return [node, pos - seen];
      seen += node.data.length;
      last = node;
    }
    return last ? [last, last.data.length] : [root, 0];
  }

  function offsetIn(root, node, offset) {
    const r = document.createRange();
    r.setStart(root, 0);
    r.setEnd(node, offset);
    return r.toString().length; // UTF-16 units
  }

  function addFromSelection(s) {
    const sel = window.getSelection();
    if (!sel || sel.isCollapsed || !sel.rangeCount) return false;
    const range = sel.getRangeAt(0);
    if (!s.root.contains(range.startContainer) || !s.root.contains(range.endContainer)) return false;
    let a = offsetIn(s.root, range.startContainer, range.startOffset);
    let b = offsetIn(s.root, range.endContainer, range.endOffset);
    while (a < b && /\s/.test(s.raw[a])) a++;
    while (b > a && /\s/.test(s.raw[b - 1])) b--;
    if (b <= a) return false;
    const start = cpLen(s.raw.slice(0, a));
    const end = start + cpLen(s.raw.slice(a, b));
    if (!s.spans.some((x) => x.start === start && x.end === end)) {
      s.spans.push({ start, end, text: s.raw.slice(a, b), label: s.labels[0] || "" });
      s.spans.sort((x, y) => x.start - y.start || x.end - y.end);
    }
    sel.removeAllRanges();
    commitSpans(s);
    return true;
  }

  function highlightSelection() {
    if (!ws) return false;
    return ws.spans.some((s) => addFromSelection(s));
  }

  function commitSpans(s) {
    s.input.value = JSON.stringify(s.spans);
    renderSpans(s);
    s.input.dispatchEvent(new Event("change", { bubbles: true }));
  }

  function wrapRange(root, a, b, index) {
    // Wrap UTF-16 range [a, b) of root's text in <mark>, one piece per text node it crosses.
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    const pieces = [];
    let pos = 0;
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const len = node.data.length;
      const from = Math.max(a, pos), to = Math.min(b, pos + len);
      if (from < to) pieces.push([node, from - pos, to - pos]);
      pos += len;
      if (pos >= b) break;
    }
    pieces.forEach(([node, from, to]) => {
      let mid = node;
      if (from > 0) mid = mid.splitText(from);
      if (to - from < mid.data.length) mid.splitText(to - from);
      const mark = document.createElement("mark");
      mark.className = "hl-span";
      mark.dataset.span = String(index);
      mid.parentNode.replaceChild(mark, mid);
      mark.appendChild(mid);
    });
  }

  function renderSpans(s) {
    s.root.innerHTML = s.original;
    s.spans.forEach((sp, i) => {
      const a = cpToUnits(s.raw, sp.start), b = cpToUnits(s.raw, sp.end);
      wrapRange(s.root, a, b, i);
    });
    const list = $(".span-list", s.fs);
    list.innerHTML = "";
    s.spans.forEach((sp, i) => {
      const li = document.createElement("li");
      const text = document.createElement("span");
      text.className = "span-text";
      text.textContent = "“" + sp.text + "”";
      text.title = sp.text;
      li.appendChild(text);
      if (s.labels.length) {
        const select = document.createElement("select");
        select.setAttribute("aria-label", interpolate(gettext("Label for highlight %s"), [i + 1]));
        [""].concat(s.labels).forEach((lab) => {
          const o = document.createElement("option");
          o.value = lab; o.textContent = lab || gettext("(no label)");
          if (lab === (sp.label || "")) o.selected = true;
          select.appendChild(o);
        });
        select.addEventListener("change", (e) => { e.stopPropagation(); sp.label = select.value; commitSpans(s); });
        li.appendChild(select);
      }
      const rm = document.createElement("button");
      rm.type = "button";
      rm.textContent = gettext("Remove");
      rm.setAttribute("aria-label", interpolate(gettext("Remove highlight %s: %s"), [i + 1, sp.text.slice(0, 40)]));
      rm.addEventListener("click", () => { s.spans.splice(i, 1); commitSpans(s); });
      li.appendChild(rm);
      list.appendChild(li);
    });
  }

  // ------------------------------------------------------------ lifecycle

  document.addEventListener("DOMContentLoaded", init);
  document.addEventListener("htmx:afterSettle", init);
  // A refused submit (400) carries the form with each problem named beside its field: show it.
  document.addEventListener("htmx:beforeSwap", (e) => {
    if (e.detail.xhr.status === 400 && e.detail.target && e.detail.target.id === "workspace") {
      e.detail.shouldSwap = true;
      e.detail.isError = false;
    }
  });
  // The workspace is replaced after a submit, its own status line with it: the result is announced in
  // #ws-announce, which stays (outside #workspace).
  document.addEventListener("htmx:afterSettle", (e) => {
    const live = document.getElementById("ws-announce");
    if (!live || !e.detail.target || e.detail.target.id !== "workspace") return;
    const summary = $(".error-summary");
    const progress = $("[data-progress]");
    const done = $(".ws-empty h2, [data-testid=training-feedback] h1, [data-testid=completion-code]");
    let text;
    if (summary) text = gettext("Not submitted: some answers are missing.") + " " + summary.textContent.replace(/\s+/g, " ").trim();
    else text = gettext("Submitted.") + " " + (done ? done.textContent.trim() : (progress ? progress.textContent.trim() : ""));
    live.textContent = "";
    setTimeout(() => { live.textContent = text; }, 50);
  });
  document.addEventListener("htmx:responseError", () => {
    if (ws) status(gettext("Could not submit (server error); your answers are still here. Try again."), true);
  });
  document.addEventListener("htmx:sendError", () => {
    if (ws) status(gettext("Could not reach the server; your answers are still here. Try again."), true);
  });
  if (document.readyState !== "loading") init();
})();
