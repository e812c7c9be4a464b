"""The Gradio explorer around core/: figures are plain functions, callbacks are plain functions."""
