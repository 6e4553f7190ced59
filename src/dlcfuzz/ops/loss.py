"""Loss operators: negative log-likelihood, softmax cross-entropy."""
