"""Models: chat model providers, JSON answers, the replay model, usage, the model store and embeddings."""
