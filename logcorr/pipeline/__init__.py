"""The stages ``logcorr.ingest.ingest`` runs, one module each (docs/design.md, "The flow of an ingest").

``plan`` (what is read and how, before reading) → ``read`` (one input: its format, record chunks,
multi-line records re-joined) → ``enrich`` (records → ``events`` rows) → ``stacks`` and the table
builders (a chunk's rows of every table) → ``run`` (OUT open; each chunk written and counted) →
``finish`` (the tables summed up, the manifest, OUT committed); ``notes`` holds what ingest says.
"""
