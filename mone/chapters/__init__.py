"""What the book's notebooks call, one module per chapter (`figure1` ... `figure7`, `table1`, the
speed chapters) and what they share: the chapter's setting (`chapter`), analysis of run files and
router outputs (`analysis`, `routers`, `router_plots`), the headline comparisons (`headlines`) and the
recipes' diagnostics (`calibration`, `devices`). A notebook loads, plots and states verdicts; the logic
is here, where it is tested. The claims and their statistics are in `mone.evidence`, the figures'
style in `mone.plotting`, and the pages written outside a notebook in `mone.publish`."""
