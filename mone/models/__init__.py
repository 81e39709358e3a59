"""The models: ViT, MatViT, MoD and MoNE for images (`vit`), their ViViT counterparts (`vivit`),
the kinds that build, run, train and count each (`kinds`), and the pieces they share: model
configs (`config`), transformer layers (`layers`), Expert Preferred Routing (`routing`), the
drop-in nested-expert encoder (`nested`), the opt-in fused nested-MLP kernel (`fused_mlp`), the
naive masked MoNE (`masked`) and big_vision checkpoints (`pretrained`).

Nothing is imported here, so that `mone.models.config` and `mone.models.kinds` (and with them
`mone.flops` and the training configs) load without Flax."""
