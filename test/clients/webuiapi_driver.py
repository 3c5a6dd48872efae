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
    # sd-webui-controlnet's API as webuiapi sends it: its lists, two stacked units (canny and none), detect.
    cn_models = api.controlnet_model_list()
    emit("controlnet_lists", version=api.controlnet_version(), models=cn_models, modules=api.controlnet_module_list())
    api.util_set_model("FLUX.1-dev")
    union = next(m for m in cn_models if "union" in m)
    hint = Image.new("RGB", (64, 64), (255, 255, 255))
    hint.paste((0, 0, 0), (16, 16, 48, 48))
    units = [
        webuiapi.ControlNetUnit(image=hint, module="canny", model=union, threshold_a=100, threshold_b=200),
        webuiapi.ControlNetUnit(image=hint, module="none", model=union, weight=0.5, control_mode=1),
    ]
    # A fresh `alwayson_scripts`: webuiapi 0.9.17 writes the units into its mutable default argument, so every later
    # txt2img of this client would carry them (to FLUX.1-schnell, which has no ControlNet: a 400 naming the unit).
    cn = api.txt2img(prompt="a house", width=64, height=64, steps=2, seed=5, controlnet_units=units, alwayson_scripts={})
    emit("controlnet_txt2img", size=list(cn.image.size), images=len(cn.images), warnings=cn.info.get("warnings", []))
    det = api.controlnet_detect(images=[hint], module="canny", threshold_a=100, threshold_b=200)
    emit("controlnet_detect", images=len(det.images), size=list(det.image.size), info=det.info)
    api.util_set_model("FLUX.1-schnell")

    # webuiapi calls .json() on these: they must answer JSON.
    emit("idle_actions", interrupt=api.interrupt(), skip=api.skip())

    emit("interrupt_phase")
    sys.stdin.readline()  # the test has made the sampler slow
    result = {}
    def render():
        try:
            result.update(r=api.txt2img(prompt="stop me", width=64, height=64, steps=20))
        except Exception as e:  # said, not swallowed: the test fails naming it
            emit("interrupt_render_failed", error=str(e)[:500])
            raise

    worker = threading.Thread(target=render)
    worker.start()
    # A user presses Interrupt once the preview shows something: at least one sampling step done.
    while worker.is_alive() and api.get_progress()["state"]["sampling_step"] < 1:
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
