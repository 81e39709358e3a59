"""The pages written outside a notebook: the landing page and the verdict tables (`pages`), the ten-seed
readout (`plan_readout`), the calibration page (`recalibration_page`), and the command line that writes
them (`cli`, run as `python -m mone.chapters`). The top layer: it reads the chapters' results."""
