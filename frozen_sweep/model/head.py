"""The classification head on an encoder (RoBERTa's, as fairseq's RobertaClassificationHead and Hugging Face's
RobertaClassificationHead build it): the first token's state → dropout → dense d→d → tanh → dropout → projection to
the classes. Its own module type, so that its parameters are their own component, `head`."""

from torch import Tensor, nn


class ClassificationHead(nn.Module):
    def __init__(self, d_model: int, num_classes: int, dropout: float):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        self.dense = nn.Linear(d_model, d_model)
        self.out_proj = nn.Linear(d_model, num_classes)

    def forward(self, states: Tensor) -> Tensor:  # (B, T, D) → (B, C)
        x = self.dropout(states[:, 0])  # (B, D): the first token, bos
        x = self.dropout(self.dense(x).tanh())
        return self.out_proj(x)
