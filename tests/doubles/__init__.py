"""Loopback servers that stand in for a provider in the tests; the product never imports them.

The demo's simulated judge (judges/fakeserver.py, driven by judges/simulation.py) is not here: `make run` serves it.
"""
