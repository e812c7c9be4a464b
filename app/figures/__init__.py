"""The page's figures, on a floor of their own: pure builders that take data (tensors, an Inspection, numbers)
and return a figure (Plotly, or escaped HTML/SVG), their words in the event's language (app.i18n.text, set once
per event by app.views). Tabs and the Learn path import them alike; a builder imports no tab, reads no component
or session, and a figure is not patched after it is built: what a caller needs differently is a parameter."""
