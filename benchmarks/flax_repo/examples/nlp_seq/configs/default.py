# Copyright 2025 The Flax Authors.
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.

"""Default hyperparameters for NLP sequence tagging."""

import ml_collections


def get_config():
  """Get the default hyperparameter configuration."""
  config = ml_collections.ConfigDict()

  # Model directory for checkpoints and logs
  config.model_dir = ''

  # Experiment name
  config.experiment = 'xpos'

  # Training hyperparameters
  config.batch_size = 64
  config.num_train_steps = 75000
  config.eval_frequency = 100

  # Optimizer hyperparameters
  config.learning_rate = 0.05
  config.weight_decay = 1e-1

  # Model hyperparameters
  config.max_length = 256

  # Random seed
  config.random_seed = 0

  # Data paths
  config.train = ''
  config.dev = ''

  return config
