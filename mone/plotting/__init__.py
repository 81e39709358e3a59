"""The book's figures: one style and the model colours (`plots`), the audit every figure's text passes
(`legibility`), and the claims' own figures (`claim_plots`). Above the claims, below the chapters."""
