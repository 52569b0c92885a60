// The dashboard's script: it asks before an action, and refreshes the
// counts (and the overview's charts) every few seconds. The page works
// without it.
(function () {
  'use strict';

  // Each action form carries its question in data-confirm.
  document.addEventListener('submit', function (ev) {
    var question = ev.target.getAttribute('data-confirm');
    if (question && !window.confirm(question)) {
      ev.preventDefault();
    }
  });

  var every = (parseInt(document.body.getAttribute('data-refresh'), 10) || 5) * 1000;

  function show(fields) {
    var els = document.querySelectorAll('[data-stat]');
    for (var i = 0; i < els.length; i++) {
      var key = els[i].getAttribute('data-stat');
      if (Object.prototype.hasOwnProperty.call(fields, key)) {
        els[i].textContent = fields[key];
        if (key === 'error') {
          els[i].hidden = fields[key] === '';
        }
      }
    }
    var charts = document.querySelectorAll('img.chart');
    for (var j = 0; j < charts.length; j++) {
      var base = charts[j].getAttribute('src').split('?')[0];
      charts[j].setAttribute('src', base + '?t=' + Date.now());
    }
  }

  function refresh() {
    fetch('stats.json', { credentials: 'same-origin', cache: 'no-store' })
      .then(function (r) {
        if (!r.ok) { throw new Error('HTTP ' + r.status); }
        return r.json();
      })
      .then(function (d) {
        show(d.fields || {});
        var badges = document.querySelectorAll('[data-paused]');
        for (var k = 0; k < badges.length; k++) {
          badges[k].hidden = !d.paused;
        }
      })
      .catch(function () { /* keep what is shown; try again later */ })
      .then(function () { window.setTimeout(refresh, every); });
  }
  window.setTimeout(refresh, every);
}());
