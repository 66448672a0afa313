"""Training straight from load_dataset: a Keras model on images and labels, and a
training step that consumes ragged boxes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

import recordkit as rk

SCHEMA = rk.Schema(
    name="shapes",
    fields={
        "image": rk.FieldSpec(codec="image", options={"channels": 3}),
        "label": rk.FieldSpec(codec="label", options={"names": ["dark", "light"]}),
        "objects": rk.FieldSpec(codec="bbox", options={"labels": ["square"]}),
    },
)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Dark and light pictures of different sizes, each with 0 to 3 bright squares."""
    rng = np.random.default_rng(6)
    records = []
    for i in range(24):
        light = i % 2
        height, width = (int(v) for v in rng.integers(10, 16, 2))
        image = np.full((height, width, 3), 200 if light else 40, np.uint8)
        boxes = []
        for _ in range(i % 4):
            y, x = int(rng.integers(0, height - 4)), int(rng.integers(0, width - 4))
            image[y : y + 4, x : x + 4] = 255
            boxes.append([x / width, y / height, (x + 4) / width, (y + 4) / height])
        records.append(
            {"image": image, "label": int(light), "objects": {"boxes": boxes, "labels": [0] * len(boxes)}}
        )
    path = tmp_path_factory.mktemp("training") / "shapes"
    rk.write_dataset(records, SCHEMA, path, shard_records=8, progress=False)
    return path


def test_a_keras_model_trains_for_an_epoch_from_load_dataset(dataset: Path) -> None:
    ds = rk.load_dataset(
        dataset,
        fields=["image", "label"],
        batch_size=8,
        image_size=(12, 12),
        shuffle_files=True,
        shuffle_buffer=24,
        seed=0,
    ).map(lambda r: (tf.cast(r["image"], tf.float32) / 255.0, r["label"]))
    tf.keras.utils.set_random_seed(0)
    model = tf.keras.Sequential(
        [
            tf.keras.Input((12, 12, 3)),
            tf.keras.layers.Conv2D(4, 3, activation="relu"),
            tf.keras.layers.GlobalAveragePooling2D(),
            tf.keras.layers.Dense(2),
        ]
    )
    model.compile(
        optimizer=tf.keras.optimizers.Adam(0.05),
        loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    history = model.fit(ds, epochs=1, verbose=0, shuffle=False)  # load_dataset shuffles
    assert history.params["steps"] == 3
    assert np.isfinite(history.history["loss"][0])
    predictions = model.predict(ds.map(lambda x, y: x), verbose=0)
    assert predictions.shape == (24, 2)


def test_a_training_step_consumes_ragged_boxes(dataset: Path) -> None:
    """Learn to count the squares of each image and the area they cover: both targets
    are computed in the training step from the ragged boxes, ``[B, (n), 4]``."""
    ds = rk.load_dataset(dataset, fields=["image", "objects"], batch_size=6, image_size=(12, 12))
    assert isinstance(ds.element_spec["objects"]["boxes"], tf.RaggedTensorSpec)
    tf.keras.utils.set_random_seed(0)
    model = tf.keras.Sequential(
        [tf.keras.Input((12, 12, 3)), tf.keras.layers.Flatten(), tf.keras.layers.Dense(2)]
    )
    optimizer = tf.keras.optimizers.SGD(0.001)

    def targets(boxes: tf.RaggedTensor) -> tf.Tensor:
        counts = tf.cast(boxes.row_lengths(), tf.float32)
        areas = (boxes[:, :, 2] - boxes[:, :, 0]) * (boxes[:, :, 3] - boxes[:, :, 1])  # ragged [B, (n)]
        return tf.stack([counts, tf.reduce_sum(areas, axis=1)], axis=1)  # 0 area without boxes

    @tf.function
    def step(batch: dict[str, tf.Tensor]) -> tf.Tensor:
        want = targets(batch["objects"]["boxes"])
        with tf.GradientTape() as tape:
            predicted = model(tf.cast(batch["image"], tf.float32) / 255.0)
            loss = tf.reduce_mean(tf.square(predicted - want))
        gradients = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(gradients, model.trainable_variables, strict=True))
        return loss

    before = [v.numpy().copy() for v in model.trainable_variables]
    losses = [float(step(batch)) for batch in ds]
    assert len(losses) == 4
    assert all(np.isfinite(losses))
    after = [v.numpy() for v in model.trainable_variables]
    assert all(not np.array_equal(b, a) for b, a in zip(before, after, strict=True))  # it trained
    got = np.concatenate([targets(b["objects"]["boxes"]).numpy() for b in ds])
    np.testing.assert_array_equal(got[:, 0], [i % 4 for i in range(24)])
    sizes = np.concatenate([b["image/shape"].numpy()[:, :2] for b in ds])
    squares = np.array([i % 4 for i in range(24)]) * 16.0 / sizes.prod(axis=1)  # 4 x 4 pixels each
    np.testing.assert_allclose(got[:, 1], squares, rtol=1e-5)


def test_random_windows_do_not_depend_on_tensorflows_global_seed_and_the_shuffles_follow_it(
    dataset: Path,
) -> None:
    """The windows are keyed by ``seed`` and the record alone; the shuffles are tf.data's,
    which combine ``seed`` with TensorFlow's global seed (``tf.random.set_seed``)."""

    def read(shuffle: bool) -> tuple[list[list[int]], list[int]]:
        ds = rk.load_dataset(
            dataset,
            fields=["image", "objects"],
            batch_size=24,
            image_size=(12, 12),
            image_fit="random_crop_or_pad",
            shuffle_files=shuffle,
            shuffle_buffer=24 if shuffle else 0,
            seed=3,
        )
        batch = next(iter(ds))
        counts = batch["objects"]["boxes"].row_lengths()
        return batch["image/offset"].numpy().tolist(), counts.numpy().tolist()

    windows, _ = read(shuffle=False)
    _, shuffled = read(shuffle=True)
    try:
        tf.random.set_seed(11)
        assert read(shuffle=False)[0] == windows  # the same record, the same window
        assert read(shuffle=True)[1] != shuffled  # tf.data's shuffle takes the global seed in
    finally:
        tf.random.set_seed(None)
    assert read(shuffle=True)[1] == shuffled  # cleared: the order given by seed alone again
