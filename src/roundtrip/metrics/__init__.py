"""Metrics: image quality (PSNR, SSIM), text (CER, WER) and set-level summaries."""
