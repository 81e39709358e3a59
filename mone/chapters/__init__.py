"""What the book's notebooks call: profiles and cached runs (`experiments`), analysis of run
files and router outputs (`analysis`, `routers`), claims and their verdicts (`claims`, decided
by the intervals of `stats`, shown by `verdicts`), and figures (`plots`, `claim_plots`,
`router_plots`). A notebook loads, plots and states verdicts; the logic is here, where it is
tested. The pages written outside a notebook come from `python -m mone.chapters` (`cli`)."""
