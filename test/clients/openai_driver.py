"""Drives comfy-durable's OpenAI image API with the real `openai` Python SDK and prints one JSON line of
observations per step for test/integration/openai-images.test.ts to check.
Usage: openai_driver.py <base_url> <api_key> <image.png> <mask.png>"""
import base64
import hashlib
import json
import struct
import sys

import openai


def emit(step, **facts):
    print(json.dumps({"step": step, **facts}), flush=True)


def png_facts(b64):
    """Decodes an answer's image: PNG signature and IHDR size, and a digest to compare renders."""
    raw = base64.b64decode(b64)
    assert raw[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    width, height = struct.unpack(">II", raw[16:24])
    return {"size": [width, height], "sha256": hashlib.sha256(raw).hexdigest()}


def error_facts(err):
    return {"status": err.status_code, "message": err.message, "param": getattr(err, "param", None),
            "type": getattr(err, "type", None), "code": getattr(err, "code", None)}


def main():
    base_url, api_key, image_path, mask_path = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
    client = openai.OpenAI(base_url=f"{base_url}/v1", api_key=api_key, max_retries=0)

    emit("models", ids=[m.id for m in client.models.list().data])

    runs = []
    for _ in range(2):
        r = client.images.generate(model="imagegen-flux-schnell", prompt="a lighthouse at dusk", size="256x256",
                                   extra_body={"seed": 42, "steps": 2})
        runs.append({"images": [png_facts(d.b64_json) for d in r.data], "seeds": [getattr(d, "seed", None) for d in r.data],
                     "revised": [d.revised_prompt for d in r.data], "created": r.created})
    emit("generate", runs=runs)

    other = client.images.generate(model="imagegen-flux-schnell", prompt="a lighthouse at dusk", size="256x256",
                                   n=2, response_format="b64_json", extra_body={"seed": 43, "steps": 2})
    emit("generate_other_seed", images=[png_facts(d.b64_json) for d in other.data], seeds=[d.seed for d in other.data])

    with open(image_path, "rb") as f:
        edited = client.images.edit(image=f, prompt="make it blue", model="imagegen-flux-kontext", extra_body={"seed": 5, "steps": 2})
    emit("edit", images=[png_facts(d.b64_json) for d in edited.data], seeds=[d.seed for d in edited.data])

    with open(image_path, "rb") as a, open(image_path, "rb") as b:
        two = client.images.edit(image=[a, b], prompt="combine them", model="imagegen-flux-kontext", size="128x128",
                                 extra_body={"seed": 6, "steps": 2})
    emit("edit_two", images=[png_facts(d.b64_json) for d in two.data])

    with open(image_path, "rb") as f, open(mask_path, "rb") as m:
        inpainted = client.images.edit(image=f, mask=m, prompt="a blue ball", model="imagegen-flux-schnell", n=2,
                                       extra_body={"seed": 8, "steps": 2})
    emit("inpaint", images=[png_facts(d.b64_json) for d in inpainted.data], seeds=[d.seed for d in inpainted.data])

    try:
        client.images.generate(model="no-such-model", prompt="x")
        emit("bad_model", raised=None)
    except openai.BadRequestError as e:
        emit("bad_model", raised=type(e).__name__, **error_facts(e))

    try:
        openai.OpenAI(base_url=f"{base_url}/v1", api_key="wrong", max_retries=0).images.generate(prompt="x")
        emit("bad_key", raised=None)
    except openai.AuthenticationError as e:
        emit("bad_key", raised=type(e).__name__, **error_facts(e))

    emit("done")


if __name__ == "__main__":
    main()
