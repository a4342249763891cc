'use strict'
// Player colours in the rendered frames: in Among Us colour is identity, and our
// usernames are colour names (Red, Blue, ...). Every player model the renderer draws
// (bots/render.js) gets a skin whose shirt, sleeves and trousers are dyed its
// username's colour; head, face, hands and shoes keep the default skin's look. A
// username that is not a colour keeps the viewer's default skin.
//
// The dyed skins are built once per process, at run time, from the viewer's own bundled
// default skin (prismarine-viewer's 1.16.4 Steve, 64x64, modern layout) and are shared
// by all renderers like the viewer's own texture cache (never disposed per entity).

const COLOURS = Object.freeze({
  red: [197, 17, 17],
  blue: [19, 46, 209],
  green: [17, 127, 45],
  pink: [237, 84, 186],
  orange: [239, 125, 13],
  yellow: [245, 245, 87],
  black: [63, 71, 78],
  white: [214, 224, 240]
})

const SKIN_SIZE = 64
// Clothing areas of a 64x64 skin, [x0, y0, x1, y1) with the share of the colour's
// brightness they get (trousers a little darker than the shirt, so the figure keeps
// its shape). Only cloth pixels inside them are dyed (see isCloth); the overlay layers
// (jacket, sleeves, pants) are transparent in the default skin and stay so.
const REGIONS = [
  { box: [16, 16, 40, 32], shade: 1.0 }, // body (shirt; the neck opening stays skin)
  { box: [40, 16, 56, 32], shade: 1.0 }, // right arm (sleeve; the hand stays skin)
  { box: [32, 48, 48, 64], shade: 1.0 }, // left arm
  { box: [16, 32, 56, 48], shade: 1.0 }, // jacket and right-sleeve overlays
  { box: [48, 48, 64, 64], shade: 1.0 }, // left-sleeve overlay
  { box: [0, 16, 16, 32], shade: 0.82 }, // right leg (trousers; the shoes stay grey)
  { box: [16, 48, 32, 64], shade: 0.82 }, // left leg
  { box: [0, 32, 16, 64], shade: 0.82 } // trouser overlays
]
const BRIGHTEST_CLOTH = 175 // the default shirt's lightest value (0xafafaf teal)

/** The colour [r, g, b] a username wears, or null (not a colour name). */
function colourOf (username) {
  if (typeof username !== 'string') return null
  return Object.prototype.hasOwnProperty.call(COLOURS, username.toLowerCase()) ? COLOURS[username.toLowerCase()] : null
}

/**
 * Cloth in the default skin is teal (shirt) or blue-violet (trousers): blue well above
 * red. Skin and hair are brown (red above blue), shoes grey (equal channels).
 */
function isCloth (r, g, b, a) {
  return a > 0 && b > r + 16
}

/**
 * A copy of an RGBA skin (64x64, rows top first) with its cloth dyed `rgb`. The cloth's
 * own light and dark pixels keep a mild shading (85-100 % of the colour's brightness).
 * @param {Uint8Array|Uint8ClampedArray} src
 * @param {number[]} rgb
 */
function dyeSkin (src, rgb) {
  const out = new Uint8Array(src)
  for (const { box: [x0, y0, x1, y1], shade } of REGIONS) {
    for (let y = y0; y < y1; y++) {
      for (let x = x0; x < x1; x++) {
        const i = (y * SKIN_SIZE + x) * 4
        const [r, g, b, a] = [src[i], src[i + 1], src[i + 2], src[i + 3]]
        if (!isCloth(r, g, b, a)) continue
        const value = Math.min(1, Math.max(r, g, b) / BRIGHTEST_CLOTH)
        const f = shade * (0.6 + 0.4 * value)
        out[i] = Math.round(rgb[0] * f)
        out[i + 1] = Math.round(rgb[1] * f)
        out[i + 2] = Math.round(rgb[2] * f)
      }
    }
  }
  return out
}

/**
 * Builds one dyed skin texture per colour from the default skin file.
 * @param {object} THREE three.js (the viewer's copy)
 * @param {object} canvasLib node-canvas
 * @param {string} file absolute path of the default skin PNG
 * @returns {Promise<Map<string, object>>} colour name -> THREE.DataTexture
 */
async function buildColourSkins (THREE, canvasLib, file) {
  const image = await canvasLib.loadImage(file)
  if (image.width !== SKIN_SIZE || image.height !== SKIN_SIZE) {
    throw new Error(`${file} is ${image.width}x${image.height}, not a ${SKIN_SIZE}x${SKIN_SIZE} skin`)
  }
  const canvas = canvasLib.createCanvas(SKIN_SIZE, SKIN_SIZE)
  const ctx = canvas.getContext('2d')
  ctx.drawImage(image, 0, 0)
  const src = ctx.getImageData(0, 0, SKIN_SIZE, SKIN_SIZE).data
  const skins = new Map()
  for (const [name, rgb] of Object.entries(COLOURS)) {
    // Rows top first with flipY off: the same orientation as the viewer's own skin
    // texture (Entity.js sets flipY = false), so the model's UVs fit unchanged.
    const tex = new THREE.DataTexture(dyeSkin(src, rgb), SKIN_SIZE, SKIN_SIZE, THREE.RGBAFormat)
    tex.magFilter = THREE.NearestFilter
    tex.minFilter = THREE.NearestFilter
    tex.wrapS = THREE.RepeatWrapping
    tex.wrapT = THREE.RepeatWrapping
    tex.flipY = false
    tex.generateMipmaps = false
    tex.needsUpdate = true
    skins.set(name, tex)
  }
  return skins
}

/**
 * Puts `texture` on every skinned part of a player mesh built by the viewer's Entity
 * (an Object3D holding a SkinnedMesh per model geometry, plus the name-tag sprite).
 * @returns {boolean} whether any part was dressed
 */
function dress (mesh, texture) {
  let done = false
  mesh.traverse((o) => {
    if (!o.isSkinnedMesh || !o.material) return
    o.material.map = texture
    o.material.needsUpdate = true
    done = true
  })
  return done
}

module.exports = { COLOURS, colourOf, dyeSkin, buildColourSkins, dress }
