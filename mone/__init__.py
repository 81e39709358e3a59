"""mone: Mixture of Nested Experts (Jain et al., 2024, arXiv:2407.19985) in JAX/Flax."""

__version__ = "0.1.0"
