#pragma once

// The three entries this node adds to Stoker's registry. Each returns a
// definition; my_node.cpp registers them.

#include "stoker/registry.hpp"

/// `pipeline.source = "csv-images(HEIGHT, WIDTH)"`: one image per line of
/// a CSV file, `label,p1,...,pN` with N = HEIGHT * WIDTH gray values 0..255
/// (the layout of Kaggle's fashion-mnist_train.csv; a header line is
/// skipped). pipeline.data is the training file, pipeline.eval-data the
/// test file.
stoker::source_def csv_images_source();

/// `"brightness-jitter(AMOUNT)"`: scales each image's brightness by a
/// factor drawn from [1 - AMOUNT, 1 + AMOUNT], 0 <= AMOUNT < 1. An
/// augmentation: the evaluation chain leaves it out.
stoker::transform_def brightness_jitter_transform();

/// `trainer.model = "tiny-mlp(HIDDEN)"`: flatten, HIDDEN units with ReLU,
/// one logit per class; trained with AdamW at trainer.lr.
stoker::model_def tiny_mlp_model();
