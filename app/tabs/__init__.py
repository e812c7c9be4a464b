"""The tabs of the explorer, one module each: figure builders, callbacks, and build() for the layout."""
