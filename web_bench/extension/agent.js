// The in-page half of the extension: runs in the extension's isolated world of every top-level page
// (content script), and again on demand when the service worker finds it missing. It builds the
// structured snapshot, owns the element refs of this document and performs DOM actions on them.
// The service worker calls it with chrome.scripting.executeScript: globalThis.__farmAgent.run(op, args).
(() => {
  "use strict";
  if (globalThis.__farmAgent) return;

  // Refs live only in this isolated world: the page cannot read or forge them.
  const refOf = new WeakMap();
  const byRef = new Map();
  let nextRef = 0;

  const SKIP = new Set(["SCRIPT", "STYLE", "NOSCRIPT", "TEMPLATE", "HEAD", "META", "LINK", "TITLE"]);
  const TEXT_INPUT = new Set(["", "text", "email", "search", "tel", "url", "password"]);
  const NAME_FROM_CONTENT = new Set([
    "link", "button", "heading", "cell", "columnheader", "rowheader", "option", "tab", "menuitem",
    "listitem", "status", "alert", "legend",
  ]);
  const INTERACTIVE = new Set([
    "link", "button", "textbox", "checkbox", "radio", "combobox", "listbox", "spinbutton", "slider",
    "switch", "tab", "menuitem", "iframe",
  ]);

  const norm = (s) => (s || "").replace(/\s+/g, " ").trim();

  function roleOf(el) {
    const explicit = norm(el.getAttribute("role")).split(" ")[0];
    if (explicit && explicit !== "presentation" && explicit !== "none") return explicit;
    const tag = el.tagName;
    switch (tag) {
      case "A": case "AREA": return el.hasAttribute("href") ? "link" : null;
      case "BUTTON": case "SUMMARY": return "button";
      case "INPUT": {
        const type = (el.getAttribute("type") || "").toLowerCase();
        if (type === "hidden") return "hidden";
        if (["button", "submit", "reset", "image"].includes(type)) return "button";
        if (type === "checkbox") return "checkbox";
        if (type === "radio") return "radio";
        if (type === "number") return "spinbutton";
        if (type === "range") return "slider";
        return TEXT_INPUT.has(type) ? "textbox" : "textbox";
      }
      case "TEXTAREA": return "textbox";
      case "SELECT": return el.multiple || el.size > 1 ? "listbox" : "combobox";
      case "H1": case "H2": case "H3": case "H4": case "H5": case "H6": return "heading";
      case "IMG": return el.getAttribute("alt") === "" ? null : "img";
      case "TABLE": return "table";
      case "TR": return "row";
      case "TD": return "cell";
      case "TH": return el.getAttribute("scope") === "row" ? "rowheader" : "columnheader";
      case "UL": case "OL": return "list";
      case "LI": return "listitem";
      case "NAV": return "navigation";
      case "MAIN": return "main";
      case "HEADER": return el.closest("article,aside,main,nav,section") ? null : "banner";
      case "FOOTER": return el.closest("article,aside,main,nav,section") ? null : "contentinfo";
      case "ASIDE": return "complementary";
      case "ARTICLE": return "article";
      case "SECTION": return el.hasAttribute("aria-label") || el.hasAttribute("aria-labelledby") ? "region" : null;
      case "FORM": return el.hasAttribute("aria-label") || el.hasAttribute("aria-labelledby") ? "form" : null;
      case "FIELDSET": return "group";
      case "P": return "paragraph";
      case "DIALOG": return "dialog";
      case "IFRAME": case "FRAME": return "iframe";
      default: return null;
    }
  }

  function visible(el) {
    if (el.getAttribute("aria-hidden") === "true") return false;
    if (typeof el.checkVisibility === "function") return el.checkVisibility({ visibilityProperty: true });
    return !!(el.offsetWidth || el.offsetHeight || el.getClientRects().length);
  }

  function textOf(node) {
    // Visible text of a subtree (innerText respects CSS; textContent for hidden-aware fallback).
    if (node.nodeType === Node.TEXT_NODE) return node.data;
    return typeof node.innerText === "string" ? node.innerText : node.textContent;
  }

  function labelledBy(el) {
    const ids = norm(el.getAttribute("aria-labelledby"));
    if (!ids) return "";
    const root = el.getRootNode();
    return norm(ids.split(" ").map((id) => {
      const target = root.getElementById ? root.getElementById(id) : el.ownerDocument.getElementById(id);
      return target ? target.textContent : "";
    }).join(" "));
  }

  function fieldLabel(el) {
    const labels = el.labels ? Array.from(el.labels) : [];
    const text = labels.map((label) => {
      // The label's own text, without the value of the control it wraps.
      const clone = label.cloneNode(true);
      clone.querySelectorAll("input,select,textarea").forEach((c) => c.remove());
      return clone.textContent;
    }).join(" ");
    return norm(text);
  }

  const CONTAINERS = new Set(["cell", "columnheader", "rowheader", "listitem"]);

  function nameOf(el, role) {
    const aria = norm(el.getAttribute("aria-label")) || labelledBy(el);
    if (aria) return aria;
    // A container's controls carry their own names; naming it after them would say everything twice.
    if (CONTAINERS.has(role) && hasInteractiveInside(el)) return "";
    const tag = el.tagName;
    if (tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT") {
      const type = (el.getAttribute("type") || "").toLowerCase();
      if (tag === "INPUT" && ["button", "submit", "reset"].includes(type)) {
        return norm(el.value) || (type === "submit" ? "Submit" : type === "reset" ? "Reset" : "");
      }
      if (tag === "INPUT" && type === "image") return norm(el.getAttribute("alt"));
      return fieldLabel(el) || norm(el.getAttribute("placeholder")) || norm(el.getAttribute("title"));
    }
    if (tag === "IMG") return norm(el.getAttribute("alt")) || norm(el.getAttribute("title"));
    if (tag === "FIELDSET") {
      const legend = el.querySelector(":scope > legend");
      return legend ? norm(legend.textContent) : "";
    }
    if (tag === "IFRAME" || tag === "FRAME") return norm(el.getAttribute("title")) || norm(el.getAttribute("name"));
    if (NAME_FROM_CONTENT.has(role)) return norm(textOf(el));
    return norm(el.getAttribute("title"));
  }

  function refFor(el) {
    let ref = refOf.get(el);
    if (!ref) {
      nextRef += 1;
      ref = "x" + nextRef;
      refOf.set(el, ref);
      byRef.set(ref, new WeakRef(el));
    }
    return ref;
  }

  const quoteName = (s) => '"' + s.replace(/\\/g, "\\\\").replace(/"/g, '\\"') + '"';
  // A value is quoted when YAML would read it differently (or a line parser could be misled).
  const quoteValue = (s) => (/^[\s\-[\]'"{}#&*!|>%@`]|[:#"]|\s$/.test(s) ? JSON.stringify(s) : s);

  function childrenOf(node) {
    if (node.nodeType !== Node.ELEMENT_NODE) return Array.from(node.childNodes);
    // Open and closed shadow roots: what is rendered is the shadow tree, with slots filled.
    const shadow = chrome.dom && chrome.dom.openOrClosedShadowRoot
      ? chrome.dom.openOrClosedShadowRoot(node) : node.shadowRoot;
    if (shadow) return Array.from(shadow.childNodes);
    if (node.tagName === "SLOT") {
      const assigned = node.assignedNodes({ flatten: true });
      return assigned.length ? assigned : Array.from(node.childNodes);
    }
    return Array.from(node.childNodes);
  }

  function hasInteractiveInside(el) {
    const stack = childrenOf(el);
    while (stack.length) {
      const node = stack.pop();
      if (node.nodeType !== Node.ELEMENT_NODE) continue;
      const role = roleOf(node);
      if (role && (INTERACTIVE.has(role) || role === "img")) return true;
      stack.push(...childrenOf(node));
    }
    return false;
  }

  // Walks `node`'s children into `out` lines at `depth`. Text runs become `- text: …` lines.
  function walkChildren(node, depth, out) {
    let text = "";
    const flush = () => {
      const t = norm(text);
      if (t) out.push("  ".repeat(depth) + "- text: " + quoteValue(t));
      text = "";
    };
    for (const child of childrenOf(node)) {
      if (child.nodeType === Node.TEXT_NODE) {
        text += " " + child.data;
        continue;
      }
      if (child.nodeType !== Node.ELEMENT_NODE || SKIP.has(child.tagName)) continue;
      // A fieldset's legend is already the group's name.
      if (child.tagName === "LEGEND" && node.tagName === "FIELDSET") continue;
      if (!visible(child) && child.tagName !== "SLOT" && getComputedStyle(child).display !== "contents") continue;
      const role = roleOf(child);
      if (role === "hidden") continue;
      if (!role) {
        // An element without a role: its content belongs to the surrounding text run or is lifted up.
        if (!hasElementChildren(child) && !(chrome.dom && chrome.dom.openOrClosedShadowRoot(child))) {
          text += " " + textOf(child);
          continue;
        }
        flush();
        walkChildren(child, depth, out);
        continue;
      }
      flush();
      emit(child, role, depth, out);
    }
    flush();
  }

  const hasElementChildren = (el) => Array.from(el.childNodes).some((c) => c.nodeType === Node.ELEMENT_NODE);

  function emit(el, role, depth, out) {
    const pad = "  ".repeat(depth);
    const name = nameOf(el, role);
    let line = pad + "- " + role + (name ? " " + quoteName(name) : "");
    if (role === "heading") line += " [level=" + el.tagName.slice(1) + "]";
    if (role === "checkbox" || role === "radio" || role === "switch") {
      if (el.checked || el.getAttribute("aria-checked") === "true") line += " [checked]";
    }
    if (el.disabled || el.getAttribute("aria-disabled") === "true") line += " [disabled]";
    if (el.getAttribute("aria-expanded") === "true") line += " [expanded]";
    line += " [ref=" + refFor(el) + "]";

    if (role === "iframe") {
      let doc = null;
      try { doc = el.contentDocument; } catch (e) { doc = null; }
      if (!doc || !doc.documentElement) {
        let origin = "";
        try { origin = new URL(el.src, location.href).origin; } catch (e) { origin = ""; }
        out.push(line + ": " + JSON.stringify("[iframe cross-origin: not entered] " + origin));
        return;
      }
      out.push(line + ":");
      if (doc.body) walkChildren(doc.body, depth + 1, out);
      return;
    }
    if (el.tagName === "SELECT") {
      out.push(line + ":");
      for (const option of el.options) {
        out.push(pad + "  - option " + quoteName(norm(option.label || option.text)) + (option.selected ? " [selected]" : ""));
      }
      return;
    }
    if (el.tagName === "INPUT" || el.tagName === "TEXTAREA") {
      const type = (el.getAttribute("type") || "").toLowerCase();
      const hasValue = role === "textbox" || role === "spinbutton" || role === "slider";
      if (hasValue && el.value && type !== "password") out.push(line + ": " + quoteValue(norm(el.value)));
      else if (hasValue && el.value) out.push(line + ": \"••••\"");
      else out.push(line);
      return;
    }
    const nameFromContent = NAME_FROM_CONTENT.has(role);
    const shadow = chrome.dom && chrome.dom.openOrClosedShadowRoot(el);
    if (nameFromContent && !shadow && !hasInteractiveInside(el)) {
      // The name already says it all, unless an aria-label hides the visible text.
      const shown = norm(textOf(el));
      out.push(shown && shown !== name ? line + ": " + quoteValue(shown) : line);
      return;
    }
    if (!shadow && !hasElementChildren(el)) {
      const shown = norm(textOf(el));
      out.push(shown && shown !== name ? line + ": " + quoteValue(shown) : line);
      return;
    }
    const before = out.length;
    out.push(line + ":");
    walkChildren(el, depth + 1, out);
    if (out.length === before + 1) out[before] = line;
  }

  function snapshot(args) {
    if (typeof args.base === "number" && args.base > nextRef) nextRef = args.base;
    const out = [];
    if (document.body) walkChildren(document.body, 0, out);
    return { url: location.href, title: document.title, tree: out.join("\n"), nextRef };
  }

  function resolve(ref) {
    const holder = byRef.get(ref);
    const el = holder ? holder.deref() : undefined;
    if (!el || !el.isConnected) {
      throw new Error("ref " + JSON.stringify(ref) + " is not in the current page (stale ref); take a new browser_snapshot");
    }
    return el;
  }

  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

  async function actionable(ref, timeoutMs) {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const el = resolve(ref);
      const ok = visible(el) && !el.disabled;
      if (ok) return el;
      if (Date.now() > deadline) {
        throw new Error("element " + ref + (el.disabled ? " is disabled" : " is not visible"));
      }
      await sleep(50);
    }
  }

  function center(el) {
    el.scrollIntoView({ block: "center", inline: "center", behavior: "instant" });
    const box = el.getBoundingClientRect();
    return { x: box.left + box.width / 2, y: box.top + box.height / 2 };
  }

  // The element's centre in top-level viewport coordinates, and whether a click there would hit it.
  async function point(args) {
    const el = await actionable(args.ref, args.timeoutMs);
    const at = center(el);
    const root = el.getRootNode();
    const top = root.elementFromPoint ? root.elementFromPoint(at.x, at.y) : null;
    let hit = !!top && (top === el || el.contains(top) || (top.shadowRoot && top === el.getRootNode().host));
    let x = at.x;
    let y = at.y;
    // Same-origin frames: add each frame's offset up to the top document.
    let win = el.ownerDocument.defaultView;
    while (win && win !== window.top) {
      const frame = win.frameElement;
      if (!frame) { hit = false; break; }
      const box = frame.getBoundingClientRect();
      x += box.left + frame.clientLeft;
      y += box.top + frame.clientTop;
      win = frame.ownerDocument.defaultView;
    }
    return { x, y, hit };
  }

  async function click(args) {
    const el = await actionable(args.ref, args.timeoutMs);
    const at = center(el);
    const init = { bubbles: true, cancelable: true, composed: true, clientX: at.x, clientY: at.y, button: 0, view: window };
    el.dispatchEvent(new PointerEvent("pointerdown", { ...init, pointerType: "mouse", isPrimary: true }));
    el.dispatchEvent(new MouseEvent("mousedown", init));
    if (typeof el.focus === "function") el.focus({ preventScroll: true });
    el.dispatchEvent(new PointerEvent("pointerup", { ...init, pointerType: "mouse", isPrimary: true }));
    el.dispatchEvent(new MouseEvent("mouseup", init));
    el.click();
    return { done: true };
  }

  function setNativeValue(el, value) {
    const proto = el.tagName === "TEXTAREA" ? HTMLTextAreaElement.prototype : HTMLInputElement.prototype;
    // The prototype setter, so frameworks that shadow `value` on the instance still see the change.
    Object.getOwnPropertyDescriptor(proto, "value").set.call(el, value);
  }

  async function type(args) {
    const el = await actionable(args.ref, args.timeoutMs);
    center(el);
    el.focus({ preventScroll: true });
    if (el.tagName === "INPUT" || el.tagName === "TEXTAREA") {
      if (el.readOnly) throw new Error("element " + args.ref + " is read-only");
      setNativeValue(el, args.text);
    } else if (el.isContentEditable) {
      el.textContent = args.text;
    } else {
      throw new Error("element " + args.ref + " is not editable (" + el.tagName.toLowerCase() + ")");
    }
    el.dispatchEvent(new InputEvent("input", { bubbles: true, composed: true, inputType: "insertText", data: args.text }));
    el.dispatchEvent(new Event("change", { bubbles: true }));
    return { done: true };
  }

  async function select(args) {
    const el = await actionable(args.ref, args.timeoutMs);
    if (el.tagName !== "SELECT") throw new Error("element " + args.ref + " is not a <select>");
    const wanted = args.values;
    const picked = [];
    for (const want of wanted) {
      const option = Array.from(el.options).find((o) => o.value === want)
        || Array.from(el.options).find((o) => norm(o.label || o.text) === norm(want));
      if (!option) throw new Error("no option " + JSON.stringify(want) + " in " + args.ref);
      if (option.disabled) throw new Error("option " + JSON.stringify(want) + " is disabled");
      picked.push(option);
    }
    if (picked.length > 1 && !el.multiple) throw new Error("element " + args.ref + " takes one option");
    for (const option of el.options) option.selected = picked.includes(option);
    el.dispatchEvent(new Event("input", { bubbles: true, composed: true }));
    el.dispatchEvent(new Event("change", { bubbles: true }));
    return { done: true };
  }

  async function settle(args) {
    // Resolves once the DOM has had no mutation for `quiet` ms, or after `budget` ms.
    if (document.readyState === "loading") {
      await new Promise((r) => document.addEventListener("DOMContentLoaded", r, { once: true }));
    }
    await new Promise((resolve) => {
      let timer = null;
      const finish = () => { observer.disconnect(); clearTimeout(timer); clearTimeout(cap); resolve(true); };
      const observer = new MutationObserver(() => { clearTimeout(timer); timer = setTimeout(finish, args.quiet); });
      observer.observe(document, { subtree: true, childList: true, attributes: true, characterData: true });
      timer = setTimeout(finish, args.quiet);
      const cap = setTimeout(finish, args.budget);
    });
    return { done: true };
  }

  function pageHasText(text) {
    const body = document.body;
    if (!body) return false;
    return norm(body.innerText).toLowerCase().includes(norm(text).toLowerCase());
  }

  async function waitText(args) {
    const deadline = Date.now() + args.timeoutMs;
    for (;;) {
      const present = pageHasText(args.text);
      if (present === args.present) return { done: true };
      if (Date.now() > deadline) {
        throw new Error("text " + JSON.stringify(args.text) + (args.present ? " did not appear" : " did not go away")
          + " within " + Math.round(args.timeoutMs / 1000) + " s");
      }
      await sleep(50);
    }
  }

  function focusInfo() {
    const el = document.activeElement;
    return { tag: el ? el.tagName.toLowerCase() : "" };
  }

  const OPS = { snapshot, point, click, type, select, settle, waitText, focusInfo };

  globalThis.__farmAgent = {
    async run(op, args) {
      try {
        const fn = OPS[op];
        if (!fn) throw new Error("unknown agent operation " + op);
        return { ok: true, value: await fn(args || {}) };
      } catch (e) {
        return { ok: false, error: String((e && e.message) || e) };
      }
    },
  };
})();
