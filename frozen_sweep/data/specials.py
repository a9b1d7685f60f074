"""The special token ids of a vocabulary and how it frames a text, as the batches and the model read them: a
vocabulary of ours (SentencePiece, data/vocab.py) has fixed ids, a checkpoint's tokenizer (data/checkpoint_vocab.py)
its own, so nothing that builds a batch may assume either.

A prepared dataset holds a text's ids without any special token (a pair: text_a, `middle`, text_b); the batches add
`prefix` before and `suffix` after, and a language model's rows end with `eos`.
"""

from dataclasses import dataclass


@dataclass(frozen=True)
class Specials:
    pad: int  # fills a row: never a target (the loss ignores it), never produced by encoding text
    eos: int  # ends a language model's row (its last target), and a translation's source
    bos: int | None  # what a decoder's row starts from when the vocabulary has one (a translation's target)
    unk: int | None
    mask: int | None  # a masked LM's <mask>
    prefix: tuple[int, ...]  # before a text: ours and LLaMA's [bos], BERT's [CLS], RoBERTa's <s>, GPT-NeoX's nothing
    middle: tuple[int, ...]  # between a pair's texts: ours and RoBERTa's eos eos, BERT's [SEP]
    suffix: tuple[int, ...]  # after a text (and a pair): ours [eos], BERT's [SEP], RoBERTa's </s>, LLaMA's nothing


PAD, UNK, BOS, EOS = 0, 1, 2, 3  # a vocabulary of ours: SentencePiece's control ids
MASK = 4  # "<mask>" (masked language modelling): spm puts user-defined symbols right after the control ids
FIRST_PIECE = 5  # the first ordinary subword id of ours: masking never selects, and random replacement never draws, below
OURS = Specials(pad=PAD, eos=EOS, bos=BOS, unk=UNK, mask=MASK, prefix=(BOS,), middle=(EOS, EOS), suffix=(EOS,))
