"""logcorr: offline log and trace correlation for SGLang PD-disaggregation incidents."""

__version__ = "0.1.0"
