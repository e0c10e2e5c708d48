(function () {
  function box(r) { return [r.left + scrollX, r.top + scrollY, r.right + scrollX, r.bottom + scrollY]; }
  function px(v) { return parseFloat(v) || 0; }
  var out = {width: innerWidth, pageWidth: document.documentElement.scrollWidth, svgs: [], labels: [], texts: [],
    wide: []};
  // what makes the page itself wider than the screen (the picture and tables scroll inside their own boxes)
  document.querySelectorAll('body *').forEach(function (el) {
    var r = el.getBoundingClientRect();
    if (r.right > innerWidth + 0.5 && !(el.parentElement && el.parentElement.closest('.chart, .scroll'))) {
      out.wide.push(el.tagName.toLowerCase() + '.' + (el.getAttribute('class') || '') + ' ends at ' + Math.round(r.right));
    }
  });
  document.querySelectorAll('.chart').forEach(function (c) {
    var svg = c.querySelector('svg');
    var vb = svg.viewBox.baseVal;
    out.svgs.push({box: box(svg.getBoundingClientRect()), chart: box(c.getBoundingClientRect()),
      scrollWidth: c.scrollWidth, clientWidth: c.clientWidth, scale: svg.getBoundingClientRect().width / vb.width});
  });
  var charts = Array.prototype.map.call(document.querySelectorAll('.chart'), function (c) { return c.querySelector('svg'); });
  document.querySelectorAll('.chart svg text').forEach(function (t, i) {
    var s = getComputedStyle(t), svg = t.ownerSVGElement, vb = svg.viewBox.baseVal;
    var scale = vb && vb.width ? svg.getBoundingClientRect().width / vb.width : 1;
    out.labels.push({i: i, cls: t.getAttribute('class') || '', text: t.textContent, box: box(t.getBoundingClientRect()),
      svg: charts.indexOf(svg), px: px(s.fontSize) * scale});
  });
  // every element that shows text of its own: its colour and what is painted under it
  function paint(el) {
    var s = getComputedStyle(el);
    if (el instanceof SVGElement) {
      if (['text', 'tspan', 'svg', 'g', 'line', 'polyline'].indexOf(el.tagName) >= 0) return null;
      if (s.fill === 'none') return null;
      return {colour: s.fill, alpha: px(s.fillOpacity) * px(s.opacity)};
    }
    return {colour: s.backgroundColor, alpha: px(s.opacity)};
  }
  var shown = [];
  document.querySelectorAll('body *').forEach(function (el) {
    if (el.closest('title, style, script, desc')) return;
    var own = Array.prototype.some.call(el.childNodes, function (n) { return n.nodeType === 3 && n.data.trim(); });
    if (own && el.getClientRects().length) shown.push(el);
  });
  shown.forEach(function (el) {
    el.scrollIntoView({block: 'center', inline: 'center'});
    var r = el.getBoundingClientRect(), s = getComputedStyle(el);
    var colour = el instanceof SVGElement ? s.fill : s.color;
    var opacity = el instanceof SVGElement ? px(s.fillOpacity) : 1;
    var scale = 1;
    if (el instanceof SVGElement && el.ownerSVGElement) {
      var vb = el.ownerSVGElement.viewBox.baseVal;
      if (vb && vb.width) scale = el.ownerSVGElement.getBoundingClientRect().width / vb.width;
    }
    var samples = [];
    [0.15, 0.5, 0.85].forEach(function (f) {
      var x = r.left + r.width * f, y = r.top + r.height / 2;
      var stack = document.elementsFromPoint(x, y), at = stack.indexOf(el);
      var below = at < 0 ? stack : stack.slice(el instanceof SVGElement ? at + 1 : at);
      samples.push(below.map(paint).filter(function (p) { return p; }));
    });
    out.texts.push({tag: el.tagName, cls: el.getAttribute('class') || '', text: el.textContent.slice(0, 60),
      colour: colour, opacity: opacity, px: px(s.fontSize) * scale, weight: s.fontWeight, samples: samples});
  });
  var pre = parent.document.createElement('pre');
  pre.id = 'measured';
  pre.textContent = JSON.stringify(out);
  parent.document.body.appendChild(pre);
})();
