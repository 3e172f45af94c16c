"""Rewrite passes, one per module, grouped by the computation they transform (the registry is s2s.optimize.registry):
reductions/ (reductions, scans, histograms), contractions/, allpairs/, stencils/, memory/ (elementwise kernels and
how a kernel moves its data), launch/ (the launch shape), arithmetic/ (math, precision, unrolling, qualifiers);
normalize.py writes the canonical form the others match. A family's own analysis is in its underscore modules
beside its passes; what several families read is in common/. A family imports only from itself and common/."""
