// Mechanism animation viewer: draws the precomputed scene `SCENE` (inlined by
// mbdjax.plotting._viewer.page) on a 2D canvas, one frame at a time.
// Self-contained: no modules, no dependencies, no network access.
(function () {
  "use strict";

  const scene = SCENE;
  const is3d = scene.dimension === 3;
  const times = scene.times && scene.times.length ? scene.times : [0];
  const F = times.length;
  const NV = scene.nv | 0;
  const verts = decodeVertices(scene.vertices, F * NV * 3);
  const items = scene.items || [];
  const readouts = scene.readouts || [];
  const trace = scene.trace || null;
  const t0 = times[0];
  const duration = scene.duration > 0 ? scene.duration : times[F - 1] - t0;

  const AMBIENT = 0.35;        // share of a shaded face's colour that is lit regardless of its normal
  const MARGIN = 0.06;         // fraction of the view left empty on each side of the bounds
  const DEG = Math.PI / 180;
  const ORBIT_RATE = 0.5 * DEG; // radians of orbit per pixel dragged

  const canvas = document.getElementById("scene");
  const ctx = canvas.getContext("2d");
  const playBtn = document.getElementById("play");
  const scrub = document.getElementById("scrub");
  const timeEl = document.getElementById("time");
  const speedSel = document.getElementById("speed");
  const resetBtn = document.getElementById("reset");
  const readoutEl = document.getElementById("readout");
  const hintEl = document.getElementById("hint");

  // ---- data -------------------------------------------------------------

  // base64 → float32 little-endian (explicitly, whatever the platform's byte order).
  function decodeVertices(b64, n) {
    const bin = atob(b64 || "");
    const bytes = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
    const dv = new DataView(bytes.buffer);
    const out = new Float32Array(n);
    const m = Math.min(n, bytes.length >> 2);
    for (let i = 0; i < m; i++) out[i] = dv.getFloat32(4 * i, true);
    return out;
  }

  // Bounds from the scene, or (if absent) from every vertex of every frame.
  const bounds = scene.bounds || (function () {
    const lo = [Infinity, Infinity, Infinity], hi = [-Infinity, -Infinity, -Infinity];
    for (let i = 0; i < verts.length; i++) {
      const v = verts[i], k = i % 3;
      if (Number.isFinite(v)) { lo[k] = Math.min(lo[k], v); hi[k] = Math.max(hi[k], v); }
    }
    return lo[0] <= hi[0] ? [lo, hi] : [[-1, -1, -1], [1, 1, 1]];
  })();

  function parseHex(c) {
    const m = /^#([0-9a-f]{6})$/i.exec(c || "");
    if (!m) return null;
    const n = parseInt(m[1], 16);
    return [(n >> 16) & 255, (n >> 8) & 255, n & 255];
  }
  const fillRgb = items.map(function (it) { return it.kind === "fill" ? parseHex(it.fill) : null; });

  function formatValue(v, fmt, unit) {
    let s;
    if (typeof v !== "number") s = "\u2013";
    else if (!Number.isFinite(v)) s = String(v);
    else if (fmt === "exp") s = v.toExponential(2);
    else if (fmt === "significant") s = v.toPrecision(6);
    else s = String(v);
    return unit ? s + " " + unit : s;
  }

  // ---- vector helpers (3-element arrays) --------------------------------

  function dot(a, b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }
  function cross(a, b) {
    return [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]];
  }
  function normalize(a) {
    const n = Math.hypot(a[0], a[1], a[2]);
    return n > 0 ? [a[0] / n, a[1] / n, a[2] / n] : [0, 0, 1];
  }
  function combo(a, ka, b, kb, c, kc) {
    return [a[0] * ka + b[0] * kb + c[0] * kc, a[1] * ka + b[1] * kb + c[1] * kc, a[2] * ka + b[2] * kb + c[2] * kc];
  }

  // Horizontal reference axes for the orbit: e1 is the world axis least aligned
  // with `up`, made perpendicular to it; e2 = up × e1 (so azimuth 0 looks along -e1).
  const up = normalize(is3d && scene.up ? scene.up : [0, 0, 1]);
  const e1 = (function () {
    const a = [Math.abs(up[0]), Math.abs(up[1]), Math.abs(up[2])];
    const k = a[0] <= a[1] && a[0] <= a[2] ? 0 : a[1] <= a[2] ? 1 : 2;
    const ax = [0, 0, 0]; ax[k] = 1;
    return normalize(combo(ax, 1, up, -up[k], up, 0));
  })();
  const e2 = cross(up, e1);

  // ---- view -------------------------------------------------------------

  // Both dimensions use one orthographic camera: `target` (world point at the
  // canvas centre), `scale` (CSS pixels per metre) and, in 3D, azimuth/elevation.
  const view = { target: [0, 0, 0], scale: 1, az: -60 * DEG, el: 25 * DEG };
  let cssW = 1, cssH = 1, dpr = 1;
  let userMoved = false;       // until the user pans/zooms/orbits, resizes refit the view

  function fitView() {
    const lo = bounds[0], hi = bounds[1];
    view.target = [0.5 * (lo[0] + hi[0]), 0.5 * (lo[1] + hi[1]), 0.5 * (lo[2] + hi[2])];
    const usable = 1 - 2 * MARGIN;
    if (is3d) {
      // Half the diagonal bounds every orthographic projection of the box.
      const r = 0.5 * Math.hypot(hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2]) || 1;
      view.az = -60 * DEG;
      view.el = 25 * DEG;
      view.scale = usable * Math.min(cssW, cssH) / (2 * r);
    } else {
      let w = hi[0] - lo[0], h = hi[1] - lo[1];
      const ext = Math.max(w, h) || 1;
      w = Math.max(w, 1e-3 * ext);
      h = Math.max(h, 1e-3 * ext);
      view.scale = usable * Math.min(cssW / w, cssH / h);
    }
  }

  // Camera axes: d towards the viewer, r to the screen's right, s to the screen's top.
  function cameraBasis() {
    if (!is3d) return { r: [1, 0, 0], s: [0, 1, 0], d: [0, 0, 1] };
    const ce = Math.cos(view.el), se = Math.sin(view.el);
    const d = combo(e1, ce * Math.cos(view.az), e2, ce * Math.sin(view.az), up, se);
    const r = normalize(cross(up, d));
    return { r: r, s: cross(d, r), d: d };
  }

  // Screen coordinates (CSS px) and depth of every vertex of the current frame.
  const px = new Float64Array(NV), py = new Float64Array(NV), pz = new Float64Array(NV);

  function projectFrame(f, cam) {
    const cx = cssW / 2, cy = cssH / 2, k = view.scale, T = view.target;
    for (let i = 0, b = f * NV * 3; i < NV; i++, b += 3) {
      const x = verts[b] - T[0], y = verts[b + 1] - T[1], z = verts[b + 2] - T[2];
      px[i] = cx + k * (x * cam.r[0] + y * cam.r[1] + z * cam.r[2]);
      py[i] = cy - k * (x * cam.s[0] + y * cam.s[1] + z * cam.s[2]);
      pz[i] = x * cam.d[0] + y * cam.d[1] + z * cam.d[2];
    }
  }

  // ---- drawing ----------------------------------------------------------

  let cur = 0;

  function tracePath(cam) {
    if (!trace || trace.vertex == null || trace.vertex < 0 || trace.vertex >= NV || cur < 1) return;
    const cx = cssW / 2, cy = cssH / 2, k = view.scale, T = view.target;
    ctx.beginPath();
    for (let f = 0; f <= cur; f++) {
      const b = (f * NV + trace.vertex) * 3;
      const p = [verts[b] - T[0], verts[b + 1] - T[1], verts[b + 2] - T[2]];
      const x = cx + k * dot(p, cam.r), y = cy - k * dot(p, cam.s);
      if (f === 0) ctx.moveTo(x, y); else ctx.lineTo(x, y);
    }
    ctx.strokeStyle = trace.stroke || "#888888";
    ctx.lineWidth = trace.width || 1;
    ctx.stroke();
  }

  function polygonPath(s, e, closed) {
    ctx.beginPath();
    ctx.moveTo(px[s], py[s]);
    for (let i = s + 1; i < e; i++) ctx.lineTo(px[i], py[i]);
    if (closed) ctx.closePath();
  }

  function strokeIf(colour, width) {
    if (!colour || !(width > 0)) return;
    ctx.strokeStyle = colour;
    ctx.lineWidth = width;
    ctx.stroke();
  }

  // Lambert shading of a fill item: |n·d| (both sides lit) with light from the
  // camera, plus an ambient term. n is the polygon's normal (Newell's method).
  function shadedColour(idx, cam) {
    const it = items[idx], rgb = fillRgb[idx];
    if (!is3d || !it.shade || !rgb) return it.fill;
    const n = [0, 0, 0], base = cur * NV * 3;
    for (let i = it.start; i < it.stop; i++) {
      const j = i + 1 < it.stop ? i + 1 : it.start;
      const a = base + 3 * i, b = base + 3 * j;
      n[0] += (verts[a + 1] - verts[b + 1]) * (verts[a + 2] + verts[b + 2]);
      n[1] += (verts[a + 2] - verts[b + 2]) * (verts[a] + verts[b]);
      n[2] += (verts[a] - verts[b]) * (verts[a + 1] + verts[b + 1]);
    }
    const len = Math.hypot(n[0], n[1], n[2]);
    const lit = len > 0 ? Math.abs(dot(n, cam.d)) / len : 1;
    const f = AMBIENT + (1 - AMBIENT) * (Number.isFinite(lit) ? lit : 1);
    return "rgb(" + rgb.map(function (c) { return Math.round(c * f); }).join(",") + ")";
  }

  function drawItem(idx, cam) {
    const it = items[idx], s = it.start, e = Math.min(it.stop, NV);
    if (!(s >= 0 && s < e)) return;
    if (it.kind === "fill") {
      polygonPath(s, e, true);
      if (it.fill) { ctx.fillStyle = shadedColour(idx, cam); ctx.fill(); }
      strokeIf(it.stroke, it.width);
    } else if (it.kind === "line") {
      polygonPath(s, e, !!it.closed);
      strokeIf(it.stroke, it.width);
    } else if (it.kind === "dot") {
      ctx.beginPath();
      // world radius → pixels; never below one pixel, so small dots stay visible
      ctx.arc(px[s], py[s], Math.max(1, (it.radius || 0) * view.scale), 0, 2 * Math.PI);
      if (it.fill) { ctx.fillStyle = it.fill; ctx.fill(); }
      strokeIf(it.stroke, it.width);
    }
  }

  const order = items.map(function (_, i) { return i; });
  const depth = new Float64Array(items.length);

  function draw() {
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.fillStyle = "#ffffff";
    ctx.fillRect(0, 0, cssW, cssH);
    ctx.lineJoin = "round";
    ctx.lineCap = "round";
    const cam = cameraBasis();
    projectFrame(cur, cam);
    tracePath(cam);
    if (is3d) {
      // Painter's algorithm: farthest item (smallest mean depth) first.
      for (let i = 0; i < items.length; i++) {
        const s = items[i].start, e = Math.min(items[i].stop, NV);
        let sum = 0;
        for (let j = s; j < e; j++) sum += pz[j];
        const m = sum / Math.max(1, e - s);
        depth[i] = Number.isFinite(m) ? m : -Infinity;
      }
      order.sort(function (a, b) { return (depth[a] - depth[b]) || 0; });
    }
    for (let i = 0; i < order.length; i++) drawItem(order[i], cam);
  }

  let drawPending = false;
  function requestDraw() {
    if (drawPending) return;
    drawPending = true;
    requestAnimationFrame(function () { drawPending = false; draw(); });
  }

  // ---- frame, readouts and playback -------------------------------------

  const readoutValues = readouts.map(function (r) {
    const row = document.createElement("div");
    row.className = "row";
    const label = document.createElement("span");
    label.className = "label";
    label.textContent = r.label + ": ";
    const value = document.createElement("span");
    value.className = "value";
    row.appendChild(label);
    row.appendChild(value);
    readoutEl.appendChild(row);
    return value;
  });

  function showFrame(i) {
    cur = i;
    scrub.value = String(i);
    timeEl.textContent = "t = " + Number(times[i]).toFixed(3) + " s";
    readouts.forEach(function (r, k) {
      readoutValues[k].textContent = formatValue(r.values ? r.values[i] : undefined, r.format, r.unit);
    });
    draw();
  }

  let playing = false, simT = t0, lastTs = null, speed = 1;

  // The last frame whose time is at or before t (times are increasing).
  function frameAt(t) {
    let lo = 0, hi = F - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (times[mid] <= t) lo = mid; else hi = mid - 1;
    }
    return lo;
  }

  function setFrame(i) {
    i = Math.max(0, Math.min(F - 1, Math.round(Number(i)) || 0));
    simT = times[i];
    showFrame(i);
  }

  // Playback advances simulation time at `speed` × real time and loops at the end.
  function tick(ts) {
    if (!playing) return;
    if (lastTs !== null && duration > 0) {
      simT += speed * (ts - lastTs) / 1000;
      if (simT > t0 + duration) simT = t0 + ((simT - t0) % duration);
      const f = frameAt(simT);
      if (f !== cur) showFrame(f);
    }
    lastTs = ts;
    requestAnimationFrame(tick);
  }

  function play() {
    if (playing) return;
    playing = true;
    lastTs = null;
    if (cur === F - 1) simT = t0;   // play from the end restarts
    playBtn.innerHTML = "&#10074;&#10074; Pause";
    requestAnimationFrame(tick);
  }

  function pause() {
    playing = false;
    playBtn.innerHTML = "&#9654; Play";
  }

  // ---- layout and input -------------------------------------------------

  function resize() {
    const rect = canvas.getBoundingClientRect();
    cssW = Math.max(1, rect.width);
    cssH = Math.max(1, rect.height);
    dpr = window.devicePixelRatio || 1;
    canvas.width = Math.max(1, Math.round(cssW * dpr));
    canvas.height = Math.max(1, Math.round(cssH * dpr));
    if (!userMoved) fitView();
    draw();
  }

  // Move the camera target by a drag of (dx, dy) pixels, so the scene follows the pointer.
  function pan(dx, dy) {
    const cam = cameraBasis(), k = view.scale;
    view.target = combo(view.target, 1, cam.r, -dx / k, cam.s, dy / k);
  }

  // Zoom by `factor`, keeping the world point under (mx, my) fixed on screen.
  function zoomAt(mx, my, factor) {
    const cam = cameraBasis(), k0 = view.scale, k1 = k0 * factor;
    const c = 1 / k0 - 1 / k1, ox = mx - cssW / 2, oy = my - cssH / 2;
    view.target = combo(view.target, 1, cam.r, ox * c, cam.s, -oy * c);
    view.scale = k1;
  }

  let drag = null;
  canvas.addEventListener("pointerdown", function (e) {
    drag = { x: e.clientX, y: e.clientY, pan: !is3d || e.shiftKey || e.button === 2 };
    canvas.setPointerCapture(e.pointerId);
    canvas.classList.add("dragging");
    e.preventDefault();
  });
  canvas.addEventListener("pointermove", function (e) {
    if (!drag) return;
    const dx = e.clientX - drag.x, dy = e.clientY - drag.y;
    drag.x = e.clientX;
    drag.y = e.clientY;
    if (!dx && !dy) return;
    userMoved = true;
    if (drag.pan) pan(dx, dy);
    else {
      view.az -= dx * ORBIT_RATE;
      view.el = Math.max(-89 * DEG, Math.min(89 * DEG, view.el + dy * ORBIT_RATE));
    }
    requestDraw();
  });
  function endDrag() { drag = null; canvas.classList.remove("dragging"); }
  canvas.addEventListener("pointerup", endDrag);
  canvas.addEventListener("pointercancel", endDrag);
  canvas.addEventListener("contextmenu", function (e) { e.preventDefault(); });
  canvas.addEventListener("wheel", function (e) {
    e.preventDefault();
    const lines = e.deltaMode === 1 ? 16 : e.deltaMode === 2 ? cssH : 1;
    const rect = canvas.getBoundingClientRect();
    userMoved = true;
    zoomAt(e.clientX - rect.left, e.clientY - rect.top, Math.exp(-0.0015 * e.deltaY * lines));
    requestDraw();
  }, { passive: false });

  playBtn.addEventListener("click", function () { if (playing) pause(); else play(); });
  scrub.addEventListener("input", function () { setFrame(scrub.value); });
  speedSel.addEventListener("change", function () { speed = Number(speedSel.value) || 1; });
  resetBtn.addEventListener("click", function () { userMoved = false; fitView(); draw(); });
  document.addEventListener("keydown", function (e) {
    const tag = e.target && e.target.tagName;
    if (tag === "BUTTON" || tag === "SELECT" || e.ctrlKey || e.metaKey || e.altKey) return;
    if (e.key === " ") {
      e.preventDefault();
      if (playing) pause(); else play();
    } else if ((e.key === "ArrowLeft" || e.key === "ArrowRight") && tag !== "INPUT") {
      e.preventDefault();
      setFrame(cur + (e.key === "ArrowRight" ? 1 : -1));
    }
  });
  window.addEventListener("resize", resize);
  if (typeof ResizeObserver === "function") new ResizeObserver(resize).observe(canvas.parentNode);

  // ---- start ------------------------------------------------------------

  scrub.max = String(F - 1);
  hintEl.textContent = is3d ? "drag: orbit \u00b7 shift/right-drag: pan \u00b7 wheel: zoom"
                            : "drag: pan \u00b7 wheel: zoom";
  speed = Number(speedSel.value) || 1;

  window.mbdjaxViewer = {
    setFrame: setFrame,
    frame: function () { return cur; },
    play: play,
    pause: pause,
    readout: function () {
      return Array.prototype.map.call(readoutEl.children, function (row) { return row.textContent; }).join("\n");
    },
    // where a global point is drawn now, in CSS pixels from the canvas's top-left corner
    project: function (x, y, z) {
      const cam = cameraBasis(), T = view.target, k = view.scale;
      const v = [x - T[0], y - T[1], (z || 0) - T[2]];
      return [cssW / 2 + k * dot(v, cam.r), cssH / 2 - k * dot(v, cam.s)];
    },
    frames: F,
  };

  resize();          // sizes the canvas and fits the view
  setFrame(0);       // first draw, paused at frame 0
  window.MBDJAX_VIEWER_READY = true;
})();
