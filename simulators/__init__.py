"""Simulated devices that speak the same bytes as the real ones.

Simulators import only ``drivers`` (to reuse the codecs).
"""
