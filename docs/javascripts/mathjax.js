// MathJax reads this before it loads (javascripts/vendor/mathjax/tex-svg-full.js, fetched by
// docs/hooks/mathjax.py): it typesets the formulas pymdownx.arithmatex marks, and nothing else.
window.MathJax = {
  tex: {
    inlineMath: [["\\(", "\\)"]],
    displayMath: [["\\[", "\\]"]],
    processEscapes: true,
    processEnvironments: true,
  },
  svg: { fontCache: "global" },
  options: {
    ignoreHtmlClass: ".*|",
    processHtmlClass: "arithmatex",
  },
};
