"""VTBench (Evaluating Visual Tokenizers for Autoregressive Image Generation).

- :mod:`.image_quality`: PSNR/SSIM per item and pooled (Task 1, Table 1);
- :mod:`.perceptual`: LPIPS per item, FID/KID per set;
- :mod:`.text`: CER/WER of OCR (Task 3, App. F, Table 3);
- :mod:`.ocr_robustness`: the OCR-robustness table and rank agreement (App. G, Table 5);
- :mod:`.detail`: detail statistics of the originals (App. D, Table 4);
- :mod:`.tables`: the columns of those tables.
"""
