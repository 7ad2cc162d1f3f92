"""Simulated studies (issue 10): synthetic items per seed preset and simulated raters who rate
through the workspace's services. The judge side lives in judges/simulation.py.

    latent.py  the truth and how raters and judges deviate from it (pure)
    items.py   synthetic items per preset (pure)
    raters.py  answers per assignment, and the rating loop over the real services
    study.py   create, import, open and rate one simulated study
"""
