"""VTBench (Evaluating Visual Tokenizers for Autoregressive Image Generation).

- :mod:`.image_quality`: PSNR/SSIM per item and pooled (Task 1, Table 1);
- :mod:`.perceptual`: LPIPS per item, FID/KID per set;
- :mod:`.text`: CER/WER of OCR (Task 3, App. F, Table 3);
- :mod:`.ocr_robustness`: the OCR-robustness table and rank agreement (App. G, Table 5);
- :mod:`.detail`: detail statistics of the originals (App. D, Table 4);
- :mod:`.tables`: the columns of those tables.
"""

#: Scorers that run inside the reconstruction job of a (model, dataset) (see
#: :mod:`roundtrip.workflow.pair`): name -> ``module:function``, imported on use.
PAIR_SCORERS = {
    "image_quality": "roundtrip.evals.vtbench.image_quality:score_pair",
    "perceptual": "roundtrip.evals.vtbench.perceptual:score_pair",
    "text": "roundtrip.evals.vtbench.text:score_pair",
}
