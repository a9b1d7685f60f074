"""What a trained model is scored by: beam search (decode.py), BLEU/chrF, perplexity and token accuracy (scores.py)."""
