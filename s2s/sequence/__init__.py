"""Sequences of launches (issue 28): a host loop's window of launches captured with the state of every buffer it
touches (capture.py, window.py), how its arguments vary from one iteration to the next (variation.py), and a sequence
MEP that replays it as the application made it and as a CUDA Graph (mep.py, templates/sequence/)."""
