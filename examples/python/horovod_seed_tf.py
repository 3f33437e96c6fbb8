#!/usr/bin/env python3
# The users' "TensorFlow + Horovod" training script (docs: ../shared seed), run on gj.tensorflow,
# on Keras 3 (TensorFlow's default) and Keras 2 (TF_USE_LEGACY_KERAS=1, tf_keras).
# Differences from the original, line by line:
#   - `import horovod.tensorflow as hvd` -> `import gj.tensorflow as hvd` (the migration);
#   - `tf.keras.datasets.mnist.load_data()` downloads; here `load_data()` below makes arrays of
#     MNIST's shapes and dtypes (60000 x 28 x 28 uint8 images, uint8 labels): ten fixed class
#     templates plus noise, so the loss falls; each rank draws its own noise (different data);
#   - the output folder, the sample count and the epoch count may be moved/shrunk with
#     GJ_SEED_OUTPUT (/output), GJ_SEED_SAMPLES (60000) and GJ_SEED_EPOCHS (10), so a test
#     trains it in seconds; the defaults are the original's;
#   - on Keras 3 only, the file names: Keras 3 refuses a weights file not ending in .weights.h5
#     and saves a model only to .keras (Keras 2 writes the original's .h5 and SavedModel folder).
#     gj-mpirun /usr/share/gj/examples/python/horovod_seed_tf.py
import tensorflow as tf
import gj.tensorflow as hvd
import os
import numpy as np

hvd.init()

gpus = tf.config.experimental.list_physical_devices('GPU')
for gpu in gpus:
    tf.config.experimental.set_memory_growth(gpu, True)
if gpus:
    tf.config.experimental.set_visible_devices(gpus[hvd.local_rank()], 'GPU')


def load_data():
    samples = int(os.environ.get("GJ_SEED_SAMPLES", "60000"))
    templates = np.random.default_rng(0).integers(0, 256, size=(10, 28, 28))
    rng = np.random.default_rng(1 + hvd.rank())
    labels = rng.integers(0, 10, size=samples).astype(np.uint8)
    noise = rng.integers(-96, 97, size=(samples, 28, 28))
    images = np.clip(templates[labels] // 2 + noise + 64, 0, 255).astype(np.uint8)
    return (images, labels), (images[:0], labels[:0])


keras3 = tf.keras.__name__.startswith('keras._tf_keras')  # Keras 3's tf.keras
output = os.environ.get("GJ_SEED_OUTPUT", "/output")

(mnist_images, mnist_labels), _ = load_data()
dataset = tf.data.Dataset.from_tensor_slices(
    (tf.cast(mnist_images[..., tf.newaxis] / 255.0, tf.float32),
     tf.cast(mnist_labels, tf.int64))
)
dataset = dataset.shuffle(10000).batch(128)

model = tf.keras.Sequential([
    tf.keras.layers.Conv2D(32, [3, 3], activation='relu', input_shape=(28, 28, 1)),
    tf.keras.layers.Conv2D(64, [3, 3], activation='relu'),
    tf.keras.layers.MaxPooling2D(pool_size=(2, 2)),
    tf.keras.layers.Dropout(0.25),
    tf.keras.layers.Flatten(),
    tf.keras.layers.Dense(128, activation='relu'),
    tf.keras.layers.Dropout(0.5),
    tf.keras.layers.Dense(10, activation='softmax')
])

optimizer = tf.optimizers.Adam(learning_rate=0.001 * hvd.size())

optimizer = hvd.DistributedOptimizer(optimizer)

model.compile(optimizer=optimizer,
              loss='sparse_categorical_crossentropy',
              metrics=['accuracy'])

callbacks = [
    hvd.callbacks.BroadcastGlobalVariablesCallback(0),
]

if hvd.rank() == 0:
    callbacks.append(tf.keras.callbacks.ModelCheckpoint(
        output + ('/checkpoint-{epoch}.weights.h5' if keras3 else '/checkpoint-{epoch}.h5'),
        save_weights_only=True
    ))

model.fit(dataset, epochs=int(os.environ.get("GJ_SEED_EPOCHS", "10")), callbacks=callbacks,
          verbose=1 if hvd.rank() == 0 else 0)

if hvd.rank() == 0:
    model.save(output + ('/model.keras' if keras3 else '/model'))
