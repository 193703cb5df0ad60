"""Interchange with other tools: Graphviz (``dot``), PNML and GreatSPN (``pnml``), Storm (``storm``)."""
