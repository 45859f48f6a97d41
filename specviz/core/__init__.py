"""Model-independent maths: sampling warps, residuals, tree structures, acceptance rules."""
