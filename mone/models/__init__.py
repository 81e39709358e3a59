"""The models: ViT, MatViT, MoD and MoNE for images (`vit`), their ViViT counterparts (`vivit`),
and the pieces they share: model configs (`config`), transformer layers (`layers`), Expert
Preferred Routing (`routing`), the drop-in nested-expert encoder (`nested`), the opt-in fused
nested-MLP kernel (`fused_mlp`), the naive masked MoNE (`masked`) and big_vision checkpoints
(`pretrained`).

Nothing is imported here, so that `mone.models.config` (and with it `mone.flops` and the
training configs) loads without Flax."""
