"""Timing model: replay dynamic warp traces through a model of the SM (discrete events)."""
