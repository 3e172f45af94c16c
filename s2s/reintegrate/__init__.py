"""Stage 4, reintegrate: the winner spliced back into the application, launch sites rewritten."""
