"""Line and dump parsers: pure functions of text to typed rows (installed as logcorr.parsers)."""
