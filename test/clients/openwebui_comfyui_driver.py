"""Drives Open WebUI's own ComfyUI engine (open_webui.utils.images.comfyui, from `pip install open-webui==0.12.4`)
against a ComfyUI base URL, as its images router calls it: generate with its default workflow
(COMFYUI_DEFAULT_WORKFLOW) and the node mapping its admin page sets by default, then edit (upload the image
with comfyui_upload_image, then comfyui_edit_image; 0.12.4 ships no default edit workflow, so an img2img one
on the same checkpoint is used). Every image URL it answers is fetched as the router does (Bearer key).

usage: WEBUI_SECRET_KEY=<any> DATA_DIR=<a temp dir> python openwebui_comfyui_driver.py BASE_URL API_KEY MODEL
(Open WebUI refuses to import without WEBUI_SECRET_KEY, and keeps its database in DATA_DIR.)
"""
import asyncio
import base64
import json
import sys
import time
import uuid

import importlib.util
import os
import re

from open_webui.utils.images import comfyui as engine

# The default workflow as Open WebUI's config.py defines it, read from the installed file (importing config.py
# outside `open-webui serve` needs its static assets and database).
_config = os.path.join(os.path.dirname(importlib.util.find_spec('open_webui').origin), 'config.py')
COMFYUI_DEFAULT_WORKFLOW = re.search(r'COMFYUI_DEFAULT_WORKFLOW = """(.*?)"""', open(_config).read(), re.S).group(1)
from open_webui.utils.session_pool import get_session

base_url, api_key, model = sys.argv[1].rstrip('/'), sys.argv[2], sys.argv[3]

# The admin page's default mapping for the default workflow (prompt 6, model 4, size and batch 5, steps and seed 3).
NODES = [
    engine.ComfyUINodeInput(type='prompt', node_ids=['6'], key='text'),
    engine.ComfyUINodeInput(type='model', node_ids=['4'], key='ckpt_name'),
    engine.ComfyUINodeInput(type='width', node_ids=['5'], key='width'),
    engine.ComfyUINodeInput(type='height', node_ids=['5'], key='height'),
    engine.ComfyUINodeInput(type='n', node_ids=['5'], key='batch_size'),
    engine.ComfyUINodeInput(type='steps', node_ids=['3'], key='steps'),
    engine.ComfyUINodeInput(type='seed', node_ids=['3'], key='seed'),
]

EDIT_WORKFLOW = json.loads(COMFYUI_DEFAULT_WORKFLOW)
EDIT_WORKFLOW['10'] = {'class_type': 'LoadImage', 'inputs': {'image': 'example.png'}}
EDIT_WORKFLOW['11'] = {'class_type': 'VAEEncode', 'inputs': {'pixels': ['10', 0], 'vae': ['4', 2]}}
EDIT_WORKFLOW['3']['inputs']['latent_image'] = ['11', 0]
EDIT_WORKFLOW['3']['inputs']['denoise'] = 0.6
del EDIT_WORKFLOW['5']
EDIT_NODES = [
    engine.ComfyUINodeInput(type='prompt', node_ids=['6'], key='text'),
    engine.ComfyUINodeInput(type='model', node_ids=['4'], key='ckpt_name'),
    engine.ComfyUINodeInput(type='image', node_ids=['10'], key='image'),
    engine.ComfyUINodeInput(type='seed', node_ids=['3'], key='seed'),
]


async def fetch(url):
    session = await get_session()
    headers = {'Authorization': f'Bearer {api_key}'} if api_key else None
    async with session.get(url, headers=headers) as r:
        r.raise_for_status()
        return r.headers.get('content-type'), await r.read()


def png_size(data):
    return int.from_bytes(data[16:20], 'big'), int.from_bytes(data[20:24], 'big')


async def main():
    t0 = time.time()
    form = engine.ComfyUICreateImageForm(
        workflow=engine.ComfyUIWorkflow(workflow=COMFYUI_DEFAULT_WORKFLOW, nodes=NODES),
        prompt='a lighthouse at dusk', width=64, height=64, n=1, steps=2,
    )
    res = await engine.comfyui_create_image(model, form, str(uuid.uuid4()), base_url, api_key)
    assert res and res['data'], f'generate answered {res}'
    ctype, data = await fetch(res['data'][0]['url'])
    print(f'generate: {len(res["data"])} image(s) in {time.time() - t0:.1f} s, {ctype}, {len(data)} bytes, {png_size(data)}, url {res["data"][0]["url"]}')

    t0 = time.time()
    item = ('image', ('input.png', data, 'image/png'))
    uploaded = await engine.comfyui_upload_image(item, base_url, api_key)
    print(f'upload: {uploaded}')
    edit = engine.ComfyUIEditImageForm(
        workflow=engine.ComfyUIWorkflow(workflow=json.dumps(EDIT_WORKFLOW), nodes=EDIT_NODES),
        image=[uploaded['name']], prompt='the same lighthouse in snow',
    )
    res = await engine.comfyui_edit_image(model, edit, str(uuid.uuid4()), base_url, api_key)
    assert res and res['data'], f'edit answered {res}'
    ctype, edited = await fetch(res['data'][0]['url'])
    print(f'edit: {len(res["data"])} image(s) in {time.time() - t0:.1f} s, {ctype}, {len(edited)} bytes, {png_size(edited)}, differs from input: {edited != data}')


asyncio.run(main())
