"""Drives comfy-durable with the real `webuiapi` client (PyPI, mix1009/sdwebuiapi) and prints one JSON line of
observations per step for test/integration/webuiapi.test.ts to check. Usage: webuiapi_driver.py <port> [password]."""
import json
import sys
import threading
import time

import webuiapi
from PIL import Image


def emit(step, **facts):
    print(json.dumps({"step": step, **facts}), flush=True)


def main():
    port = int(sys.argv[1])
    password = sys.argv[2] if len(sys.argv) > 2 else None
    api = webuiapi.WebUIApi(host="127.0.0.1", port=port, username="user" if password else None, password=password)

    emit("discovery",
         models=api.util_get_model_names(),
         samplers=api.util_get_sampler_names()[:3],
         schedulers=api.util_get_scheduler_names()[:3],
         upscalers=[u["name"] for u in api.get_upscalers()],
         latent=[m["name"] for m in api.get_latent_upscale_modes()],
         loras=api.get_loras(),
         memory=sorted(api.get_memory().keys()),
         embeddings=api.get_embeddings(),
         styles=api.get_prompt_styles(),
         flags=api.get_cmd_flags(),
         hypernetworks=api.get_hypernetworks(),
         face_restorers=api.get_face_restorers())

    api.util_set_model("FLUX.1-schnell")
    api.util_wait_for_ready(check_interval=0.2)
    emit("model", current=api.util_get_current_model())

    r = api.txt2img(prompt="a lighthouse", width=960, height=540, steps=2, seed=11)
    emit("txt2img", size=list(r.image.size), seed=r.info["seed"], warnings=r.info.get("warnings", []), parameters_steps=r.parameters["steps"])

    hr = api.txt2img(prompt="hires", width=128, height=128, steps=1, enable_hr=True, hr_scale=2,
                     hr_upscaler=webuiapi.HiResUpscaler.Latent, hr_second_pass_steps=1)
    emit("hires", size=list(hr.image.size))

    info = api.png_info(r.image)
    emit("png_info", info=info.info if isinstance(info.info, str) else json.dumps(info.info))

    up = api.extra_single_image(image=r.image, upscaler_1=webuiapi.Upscaler.Lanczos, upscaling_resize=2)
    emit("extras", size=list(up.image.size))

    api.util_set_model("FLUX.1-Kontext-dev")
    edit = api.img2img(images=[Image.new("RGB", (96, 64), (200, 30, 30))], prompt="make it blue", width=96, height=64, steps=1)
    emit("kontext_img2img", size=list(edit.image.size), warnings=edit.info.get("warnings", []))
    api.util_set_model("FLUX.1-schnell")

    # webuiapi calls .json() on these: they must answer JSON.
    emit("idle_actions", interrupt=api.interrupt(), skip=api.skip())

    emit("interrupt_phase")
    sys.stdin.readline()  # the test has made the sampler slow
    result = {}
    worker = threading.Thread(target=lambda: result.update(r=api.txt2img(prompt="stop me", width=64, height=64, steps=20)))
    worker.start()
    # A user presses Interrupt once the preview shows something: at least one sampling step done.
    while api.get_progress()["state"]["sampling_step"] < 1:
        time.sleep(0.05)
    api.interrupt()
    worker.join()
    stopped = result["r"]
    # webuiapi's `result.image` is images[0]: it must exist.
    emit("interrupted", images=len(stopped.images), size=list(stopped.image.size), interrupted=stopped.info.get("interrupted"), partial=stopped.info.get("partial"))
    api.util_wait_for_ready(check_interval=0.2)
    emit("done")


if __name__ == "__main__":
    main()
