"""Claims and statistics, below the chapters: what a claim is and how each is declared (`declarations`),
decided (`claims`, by the intervals of `stats`, paired as `significance` tests its premises), compared
over arms (`comparisons`), frozen before its runs (`preregistration`, in the seed plans of
`seed_plans`) and stated (`verdicts`). Nothing here draws or imports a chapter
(tests/e2e/test_layout.py checks the layers)."""
